// node foxglove_client.mjs URL SECONDS
// Connects to a Foxglove WebSocket server as Foxglove's own client library does, subscribes to
// every channel and decodes what arrives. Prints one JSON line:
//   {"documented": {"subprotocol", "result"}, "subprotocol": ..., "channels": {topic: {...}}}
// "documented": a connection offering FoxgloveClient.SUPPORTED_SUBPROTOCOL, as the library's
// docs show; the rest: a connection offering foxglove.sdk.v1 (what foxglove-sdk servers accept).
import wsProtocol from "@foxglove/ws-protocol";  // CommonJS: named imports are not detected
import WebSocket from "ws";

import { decode, plain } from "./decode.mjs";

const { FoxgloveClient } = wsProtocol;

const [url, seconds] = process.argv.slice(2);
const deadline = Date.now() + Number(seconds) * 1000;

function tryOpen(subprotocol) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, [subprotocol]);
    ws.on("unexpected-response", (_req, res) => { resolve({ subprotocol, result: `HTTP ${res.statusCode}` }); ws.terminate(); });
    ws.on("open", () => { resolve({ subprotocol, result: "open", agreed: ws.protocol }); ws.close(); });
    ws.on("error", (err) => resolve({ subprotocol, result: `error ${err.message}` }));
  });
}

async function openWhenUp(subprotocol) {
  for (;;) {  // the server comes up a moment after the process starts
    const outcome = await tryOpen(subprotocol);
    if (!outcome.result.startsWith("error") || Date.now() > deadline) return outcome;
    await new Promise((r) => setTimeout(r, 200));
  }
}

const documented = await openWhenUp(FoxgloveClient.SUPPORTED_SUBPROTOCOL);
const channels = {};
const byChannelId = new Map();
const bySubscription = new Map();
const errors = [];
const client = new FoxgloveClient({ ws: new WebSocket(url, ["foxglove.sdk.v1"]) });
client.on("error", (err) => { if (errors.length < 20) errors.push(String(err?.message ?? err)); });
client.on("advertise", (advertised) => {
  for (const ch of advertised) {
    if (byChannelId.has(ch.id)) continue;
    byChannelId.set(ch.id, ch);
    channels[ch.topic] = { schemaName: ch.schemaName, encoding: ch.encoding, schemaEncoding: ch.schemaEncoding,
                           count: 0, first: null };
    bySubscription.set(client.subscribe(ch.id), ch);
  }
});
client.on("message", ({ subscriptionId, data }) => {
  const ch = bySubscription.get(subscriptionId);
  const entry = channels[ch.topic];
  try {
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    const message = decode(ch.schemaName, ch.schema, bytes);
    entry.count += 1;
    if (entry.first === null) entry.first = plain(message);
  } catch (err) {
    if (errors.length < 20) errors.push(`${ch.topic}: ${err.message}`);
  }
});
await new Promise((resolve) => {
  const timer = setInterval(() => {
    const all = Object.keys(channels).length > 0 && Object.values(channels).every((c) => c.count > 0);
    if (all || Date.now() > deadline) { clearInterval(timer); resolve(); }
  }, 100);
});
client.close();
// Exit once the line is out: a pipe takes 64 KiB at a time.
process.stdout.write(JSON.stringify({ documented, subprotocol: "foxglove.sdk.v1", channels, errors }) + "\n",
                     () => process.exit(0));
