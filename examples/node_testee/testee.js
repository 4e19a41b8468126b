#!/usr/bin/env node
// A minimal kstate testee in Node.js (spec/testee-protocol.md): the hello handshake, shutdown, and a few
// codec operations (zig-zag varints and varlongs, KIP-258 timestamped values). Every other operation is
// answered "unsupported". No npm packages: Node's standard library only.
//
//   kstate conformance --impl "cmd:node examples/node_testee/testee.js"
'use strict';

const PROTOCOL = 1;
const MAX_LINE_BYTES = 16 * 1024 * 1024;  // TP-11
const MAX_DEPTH = 64;                     // TP-11: the top-level object is level 1

// A line the protocol refuses (TP-11); `kind` is the internal error's type.
class WireError extends Error { constructor(kind, message) { super(message); this.kind = kind; } }
const INT32_MIN = -(2n ** 31n), INT32_MAX = 2n ** 31n - 1n;
const INT64_MIN = -(2n ** 63n), INT64_MAX = 2n ** 63n - 1n;

// --- JSON with 64-bit integers -------------------------------------------------------------------------
// JSON.parse turns 9223372036854775807 into a double; the protocol carries Java longs (OPS-2), so integers
// are parsed to BigInt by this small parser, and written back as bare digits.

function parseJson(text) {
  let i = 0;
  const ws = () => { while (' \t\r\n'.includes(text[i]) && i < text.length) i++; };
  const fail = (what) => { throw new SyntaxError(`${what} at ${i}`); };
  let depth = 0;
  const enter = () => { if (++depth > MAX_DEPTH) throw new WireError('NestingTooDeep', `nested deeper than ${MAX_DEPTH} levels`); };
  function value() {
    ws();
    const c = text[i];
    if (c === '{' || c === '[') enter();
    const result = compound(c);
    if (c === '{' || c === '[') depth--;
    return result;
  }
  function compound(c) {
    if (c === '{') {
      i++; const obj = {}; ws();
      if (text[i] === '}') { i++; return obj; }
      for (;;) {
        ws(); if (text[i] !== '"') fail('expected a key');
        const key = string(); ws();
        if (text[i++] !== ':') fail('expected :');
        obj[key] = value(); ws();
        const sep = text[i++];
        if (sep === '}') return obj;
        if (sep !== ',') fail('expected , or }');
      }
    }
    if (c === '[') {
      i++; const arr = []; ws();
      if (text[i] === ']') { i++; return arr; }
      for (;;) {
        arr.push(value()); ws();
        const sep = text[i++];
        if (sep === ']') return arr;
        if (sep !== ',') fail('expected , or ]');
      }
    }
    if (c === '"') return string();
    if (text.startsWith('true', i)) { i += 4; return true; }
    if (text.startsWith('false', i)) { i += 5; return false; }
    if (text.startsWith('null', i)) { i += 4; return null; }
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m) fail('unexpected character');
    i += m[0].length;
    return (m[2] || m[3]) ? Number(m[0]) : BigInt(m[0]);
  }
  function string() {
    const start = i; i++;
    while (text[i] !== '"') {
      if (i >= text.length) fail('unterminated string');
      i += text[i] === '\\' ? 2 : 1;
    }
    i++;
    return JSON.parse(text.slice(start, i));
  }
  const result = value(); ws();
  if (i !== text.length) fail('trailing characters');
  return decodeTexts(result);
}

// A text that is not valid Unicode travels as {"encoding": "utf-16be", "hex": ...} (TP-12): back to a JS string.
function decodeTexts(v) {
  if (Array.isArray(v)) return v.map(decodeTexts);
  if (v === null || typeof v !== 'object') return v;
  const keys = Object.keys(v);
  if (keys.length === 2 && v.encoding === 'utf-16be' && typeof v.hex === 'string') {
    if (!/^([0-9a-f]{4})*$/.test(v.hex)) throw new WireError('BadText', 'an encoded text is not whole UTF-16 code units');
    let out = '';
    for (let k = 0; k < v.hex.length; k += 4) out += String.fromCharCode(parseInt(v.hex.slice(k, k + 4), 16));
    return out;
  }
  for (const k of keys) v[k] = decodeTexts(v[k]);
  return v;
}

function toJson(v) {
  if (typeof v === 'bigint') return v.toString();
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return '[' + v.map(toJson).join(',') + ']';
  return '{' + Object.keys(v).map((k) => JSON.stringify(k) + ':' + toJson(v[k])).join(',') + '}';
}

// --- codecs ---------------------------------------------------------------------------------------------

class Refusal extends Error {}

function unhex(value, what) {
  if (value === null || value === undefined) throw new Refusal(`${what}: expected bytes, got null`);
  if (typeof value !== 'string' || value.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(value)) {
    throw new Refusal(`${what}: not a hex string`);
  }
  return Buffer.from(value, 'hex');
}

function integer(value, min, max, what) {
  if (typeof value !== 'bigint' || value < min || value > max) throw new Refusal(`${what}: ${value} out of range`);
  return value;
}

function writeUnsigned(u) {
  const out = [];
  while (u >= 0x80n) { out.push(Number((u & 0x7fn) | 0x80n)); u >>= 7n; }
  out.push(Number(u));
  return Buffer.from(out);
}

// Kafka's ByteUtils loop: at most 5 (int) or 10 (long) bytes; the last byte is shifted in whole and the
// result wrapped to the Java type, so high bits of an over-long final byte are silently dropped.
function readUnsigned(data, maxShift, bits) {
  let value = 0n, shift = 0n, pos = 0;
  for (;;) {
    if (pos >= data.length) throw new Refusal('truncated varint');
    const b = BigInt(data[pos++]);
    if ((b & 0x80n) === 0n) { value |= b << shift; break; }
    value |= (b & 0x7fn) << shift;
    shift += 7n;
    if (shift > maxShift) throw new Refusal('varint too long');
  }
  return [BigInt.asUintN(bits, value), pos];
}

function zigzagDecode(raw, bits) {
  return BigInt.asIntN(bits, (raw >> 1n) ^ -(raw & 1n));
}

function bytesOf(buf) { return { bytes: buf.toString('hex'), size: BigInt(buf.length) }; }

const OPERATIONS = {
  'varint.write_varint': (input) => {
    const v = integer(input.value, INT32_MIN, INT32_MAX, 'varint');
    return bytesOf(writeUnsigned(BigInt.asUintN(32, (v << 1n) ^ (v >> 31n))));
  },
  'varint.write_varlong': (input) => {
    const v = integer(input.value, INT64_MIN, INT64_MAX, 'varlong');
    return bytesOf(writeUnsigned(BigInt.asUintN(64, (v << 1n) ^ (v >> 63n))));
  },
  'varint.read_varint': (input) => {
    const [raw, used] = readUnsigned(unhex(input.bytes, 'varint'), 28n, 32);
    return { value: zigzagDecode(raw, 32), bytes_consumed: BigInt(used) };
  },
  'varint.read_varlong': (input) => {
    const [raw, used] = readUnsigned(unhex(input.bytes, 'varlong'), 63n, 64);
    return { value: zigzagDecode(raw, 64), bytes_consumed: BigInt(used) };
  },
  'timestamped.serialize': (input) => {
    const ts = integer(input.timestamp, INT64_MIN, INT64_MAX, 'timestamp');
    if (input.value === null) return { bytes: null };
    const head = Buffer.alloc(8);
    head.writeBigInt64BE(ts);
    return { bytes: Buffer.concat([head, unhex(input.value, 'value')]).toString('hex') };
  },
  'timestamped.deserialize': (input) => {
    if (input.bytes === null) return { result: null };
    const data = unhex(input.bytes, 'value-and-timestamp');
    if (data.length < 8) throw new Refusal(`need 8 timestamp bytes, got ${data.length}`);
    return { result: { value: data.subarray(8).toString('hex'), timestamp: data.readBigInt64BE(0) } };
  },
  'timestamped.raw_value': (input) => {
    const data = unhex(input.bytes, 'value-and-timestamp');
    if (data.length < 8) throw new Refusal(`need 8 timestamp bytes, got ${data.length}`);
    return { value: data.subarray(8).toString('hex') };
  },
  'timestamped.timestamp': (input) => {
    const data = unhex(input.bytes, 'value-and-timestamp');
    if (data.length < 8) throw new Refusal(`need 8 timestamp bytes, got ${data.length}`);
    return { timestamp: data.readBigInt64BE(0) };
  },
};

// --- the protocol ---------------------------------------------------------------------------------------

function internalError(id, type, message) { return { id, internal_error: { type, message } }; }

function answer(message) {
  if (message === null || typeof message !== 'object' || Array.isArray(message)) {
    return internalError(null, 'NotARequest', 'not a request: expected an object with id, op and input');
  }
  const id = message.id;
  if (typeof id !== 'bigint' || id < 0n) return internalError(null, 'BadId', 'the request id is not a non-negative integer');
  if (typeof message.op !== 'string') return internalError(id, 'BadOp', 'the op must be a string');
  if (message.input === undefined) message.input = {};
  if (message.op === 'hello') {
    if (message.input === null || typeof message.input !== 'object' || message.input.protocol !== BigInt(PROTOCOL)) {
      return { id, error: { type: 'ProtocolVersion', message: `this testee speaks protocol ${PROTOCOL}` } };
    }
    return { id, output: { protocol: BigInt(PROTOCOL), implementation: 'node-example', version: '0.1',
                           capabilities: Object.keys(OPERATIONS).sort() } };
  }
  if (message.op === 'shutdown') return { id, output: {} };
  const handler = Object.prototype.hasOwnProperty.call(OPERATIONS, message.op) ? OPERATIONS[message.op] : undefined;
  if (!handler) return { id, unsupported: true, reason: `no operation ${message.op.slice(0, 200)}` };
  if (message.input === null || typeof message.input !== 'object' || Array.isArray(message.input)) {
    return internalError(id, 'BadInput', 'input must be a JSON object');
  }
  try {
    return { id, output: handler(message.input) };
  } catch (e) {
    if (e instanceof Refusal) return { id, error: { type: 'Refusal', message: e.message } };
    return internalError(id, e.name, String(e.message));
  }
}

// Lines are read as bytes: an overlong one is dropped as it arrives (bounded memory), bytes that are not UTF-8
// are refused rather than silently replaced (TP-1, TP-11).
const utf8 = new TextDecoder('utf-8', { fatal: true });

function serveLine(raw) {
  let response;
  let message;
  try {
    const line = utf8.decode(raw);
    if (!line.trim()) return false;
    message = parseJson(line);
  } catch (e) {
    if (e instanceof WireError) response = internalError(null, e.kind, e.message);
    else if (e instanceof TypeError) response = internalError(null, 'NotJson', 'the line is not UTF-8');
    else response = internalError(null, 'NotJson', `request is not JSON: ${e.message}`);
  }
  if (response === undefined) response = answer(message);
  process.stdout.write(toJson(response) + '\n');
  return Boolean(message && message.op === 'shutdown' && response.output);
}

let pending = [];
let pendingBytes = 0;
let dropping = false;
process.stdin.on('data', (chunk) => {
  let start = 0;
  for (;;) {
    const newline = chunk.indexOf(10, start);
    const piece = chunk.subarray(start, newline < 0 ? chunk.length : newline);
    if (!dropping) {
      pendingBytes += piece.length;
      if (pendingBytes > MAX_LINE_BYTES) { dropping = true; pending = []; } else pending.push(piece);
    }
    if (newline < 0) return;
    start = newline + 1;
    if (dropping) {
      process.stdout.write(toJson(internalError(null, 'LineTooLong', `a line longer than ${MAX_LINE_BYTES} bytes`)) + '\n');
    } else if (serveLine(Buffer.concat(pending))) {
      process.exit(0);
    }
    pending = []; pendingBytes = 0; dropping = false;
  }
});
process.stdin.on('end', () => {
  if (pending.length && !dropping) serveLine(Buffer.concat(pending));
  process.exit(0);
});
