// node mcap_read.mjs FILE.mcap
// Reads a recording with @mcap/core (indexed reader; chunk compression from @mcap/support) and
// decodes every message with Foxglove's ros2msg reader. Prints one JSON line:
//   {"profile", "library", "channels": {topic: {schemaName, count, first, last_log_time_ns}}, "errors"}
import { open } from "node:fs/promises";

import { McapIndexedReader } from "@mcap/core";
import { loadDecompressHandlers } from "@mcap/support";

import { decode, plain } from "./decode.mjs";

const handle = await open(process.argv[2], "r");
const readable = {
  size: async () => BigInt((await handle.stat()).size),
  read: async (offset, length) => {
    const buffer = new Uint8Array(Number(length));
    await handle.read(buffer, 0, Number(length), Number(offset));
    return buffer;
  },
};
const reader = await McapIndexedReader.Initialize({ readable, decompressHandlers: await loadDecompressHandlers() });
const channels = {};
const errors = [];
for await (const record of reader.readMessages()) {
  const channel = reader.channelsById.get(record.channelId);
  const schema = reader.schemasById.get(channel.schemaId);
  const entry = (channels[channel.topic] ??= { schemaName: schema.name, encoding: channel.messageEncoding,
                                               schemaEncoding: schema.encoding, count: 0, first: null });
  try {
    const message = decode(schema.name, new TextDecoder().decode(schema.data), record.data);
    entry.count += 1;
    entry.first ??= plain(message);
    entry.last_log_time_ns = Number(record.logTime);
  } catch (err) {
    if (errors.length < 20) errors.push(`${channel.topic}: ${err.message}`);
  }
}
await handle.close();
console.log(JSON.stringify({ profile: reader.header.profile, library: reader.header.library, channels, errors }));
