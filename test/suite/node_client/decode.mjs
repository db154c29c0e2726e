// A ros2msg schema and CDR bytes -> a plain object, with Foxglove's own parser and reader (what
// the Foxglove app does with a channel of encoding "cdr" and schemaEncoding "ros2msg").
import rosmsg from "@foxglove/rosmsg";  // CommonJS packages: their default export
import rosmsg2 from "@foxglove/rosmsg2-serialization";

const { parse } = rosmsg;
const { MessageReader } = rosmsg2;

const readers = new Map();

export function decode(schemaName, schemaText, bytes) {
  let reader = readers.get(schemaText);
  if (reader === undefined) {
    reader = new MessageReader(parse(schemaText, { ros2: true }));
    readers.set(schemaText, reader);
  }
  const message = reader.readMessage(bytes);
  // CDR pads a message to 4 bytes; more left over means the schema does not describe the payload.
  const unread = bytes.byteLength - reader.lastReadByteLength();
  if (unread >= 4) {
    throw new Error(`${schemaName}: ${unread} bytes of the payload not described by its schema`);
  }
  return message;
}

// JSON for what the test checks: typed arrays as lengths, bigints as numbers, NaN as null.
export function plain(value) {
  return JSON.parse(JSON.stringify(value, (_key, v) => {
    if (typeof v === "bigint") return Number(v);
    if (ArrayBuffer.isView(v)) return { length: v.length };
    return v;
  }));
}
