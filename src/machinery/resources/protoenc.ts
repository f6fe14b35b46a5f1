/**
 * Generic spec encoder: turns a YAML-shaped spec object (the keys `talosctl get -o yaml` prints) into
 * the protobuf bytes Talos's protoenc would produce (`proto_spec`), driven by protobuf-es reflection
 * over the generated schemas, so each resource type needs at most a few per-field overrides.
 *
 * Conversions follow how Go renders the values as YAML text (talos-resource-api.md §5): enums as their
 * short lower-case names, addresses and prefixes as text, hardware addresses as `aa:bb:..`, durations
 * as Go duration strings, times as RFC 3339.
 */
import {
  create,
  ScalarType,
  toBinary,
  type DescEnum,
  type DescField,
  type DescMessage,
  type JsonObject,
  type JsonValue,
  type MessageShape,
} from "@bufbuild/protobuf";

export interface FieldOverride {
  /** Proto field (proto or JSON name) this YAML key fills, when the names differ (e.g. `speedMbit` → `speed_megabits`). */
  field?: string;
  /** Converts the YAML value first; the result then goes through the normal conversion for the field. */
  encode?: (value: unknown) => unknown;
}

export interface SpecToProtoOptions {
  /**
   * Per-field overrides keyed by the dotted path of YAML keys from the spec root, e.g. `flags` or
   * `controlPlane.port` (list items add no path segment). A string is shorthand for `{ field }`.
   */
  fields?: Record<string, FieldOverride | string>;
  /** Extra enum texts, keyed by enum full name (e.g. `talos.resource.definitions.enums.NethelpersLinkType`). */
  enums?: Record<string, Record<string, number>>;
}

export function specToProto<Desc extends DescMessage>(schema: Desc, spec: unknown, opts: SpecToProtoOptions = {}): Uint8Array {
  return toBinary(schema, specToMessage(schema, spec, opts));
}

export function specToMessage<Desc extends DescMessage>(schema: Desc, spec: unknown, opts: SpecToProtoOptions = {}): MessageShape<Desc> {
  return create(schema, messageInit(schema, spec ?? {}, "", opts) as never) as MessageShape<Desc>;
}

/** A `(value) => number` encoder for bitmask fields rendered as comma lists (`UP,BROADCAST`, `permanent`). */
export function bitflags(bits: DescEnum | Record<string, number>): (value: unknown) => unknown {
  return (value) => {
    if (typeof value !== "string") return value;
    let mask = 0;
    for (const part of value.split(",").map((p) => p.trim()).filter(Boolean)) {
      const bit = "kind" in bits && bits.kind === "enum" ? matchEnum(bits as DescEnum, part) : (bits as Record<string, number>)[part];
      if (bit === undefined) throw new Error(`unknown flag ${JSON.stringify(part)} in ${JSON.stringify(value)}`);
      mask |= bit;
    }
    return mask >>> 0;
  };
}

function messageInit(desc: DescMessage, value: unknown, path: string, opts: SpecToProtoOptions): unknown {
  const special = wellKnown(desc, value);
  if (special !== undefined) return special;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new Error(`${path || desc.typeName}: expected an object for ${desc.typeName}, got ${describeValue(value)}`);
  }
  const init: Record<string, unknown> = {};
  for (const [key, raw] of Object.entries(value)) {
    const keyPath = path ? `${path}.${key}` : key;
    const override = opts.fields?.[keyPath];
    const o: FieldOverride = typeof override === "string" ? { field: override } : (override ?? {});
    const field = findField(desc, o.field ?? key);
    if (!field) continue; // The YAML may carry fields the proto lacks.
    const v = o.encode ? o.encode(raw) : raw;
    if (v === undefined || v === null) continue;
    const converted = fieldValue(field, v, keyPath, opts);
    if (field.oneof) init[field.oneof.localName] = { case: field.localName, value: converted };
    else init[field.localName] = converted;
  }
  return init;
}

const fieldIndex = new WeakMap<DescMessage, Map<string, DescField>>();
const norm = (s: string) => s.toLowerCase().replace(/[\s_-]/g, "");

/** Exact JSON/proto/local names first, then a case- and underscore-insensitive match (`pciID` ↔ `pciid`). */
function findField(desc: DescMessage, key: string): DescField | undefined {
  let index = fieldIndex.get(desc);
  if (!index) {
    index = new Map();
    for (const f of desc.fields) for (const n of [f.jsonName, f.name, f.localName]) index.set(n, f);
    for (const f of desc.fields) for (const n of [f.jsonName, f.name]) if (!index.has(`~${norm(n)}`)) index.set(`~${norm(n)}`, f);
    fieldIndex.set(desc, index);
  }
  return index.get(key) ?? index.get(`~${norm(key)}`);
}

function fieldValue(field: DescField, v: unknown, path: string, opts: SpecToProtoOptions): unknown {
  switch (field.fieldKind) {
    case "scalar":
      return scalar(field.scalar, v, path, field.longAsString);
    case "enum":
      return enumValue(field.enum, v, path, opts);
    case "message":
      return messageInit(field.message, v, path, opts);
    case "list": {
      const items = Array.isArray(v) ? v : [v];
      return items
        .filter((item) => item !== null && item !== undefined)
        .map((item) => {
          if (field.listKind === "scalar") return scalar(field.scalar, item, path, field.longAsString);
          if (field.listKind === "enum") return enumValue(field.enum, item, path, opts);
          return messageInit(field.message, item, path, opts);
        });
    }
    case "map": {
      const out: Record<string, unknown> = {};
      const entries = v instanceof Map ? [...v.entries()] : Object.entries(v as object);
      for (const [k, item] of entries) {
        if (item === null || item === undefined) continue;
        const key = String(k);
        if (field.mapKind === "scalar") out[key] = scalar(field.scalar, item, `${path}.${key}`, false);
        else if (field.mapKind === "enum") out[key] = enumValue(field.enum, item, `${path}.${key}`, opts);
        else out[key] = messageInit(field.message, item, `${path}.${key}`, opts);
      }
      return out;
    }
  }
}

function scalar(type: ScalarType, v: unknown, path: string, longAsString: boolean): unknown {
  switch (type) {
    case ScalarType.STRING:
      return v instanceof Date ? v.toISOString() : String(v);
    case ScalarType.BOOL:
      if (typeof v === "boolean") return v;
      if (v === "true" || v === "false") return v === "true";
      throw new Error(`${path}: expected a boolean, got ${describeValue(v)}`);
    case ScalarType.BYTES:
      return toBytes(v, path);
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return Number(v);
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.SINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64: {
      const big = toBigInt(v, path);
      return longAsString ? big.toString() : big;
    }
    default:
      return Number(toBigInt(v, path));
  }
}

function toBigInt(v: unknown, path: string): bigint {
  if (typeof v === "bigint") return v;
  if (typeof v === "number" && Number.isInteger(v)) return BigInt(v);
  if (typeof v === "boolean") return v ? 1n : 0n;
  if (typeof v === "string" && /^-?\d+$/.test(v.trim())) return BigInt(v.trim());
  throw new Error(`${path}: expected an integer, got ${describeValue(v)} (use a field override for text values)`);
}

function toBytes(v: unknown, path: string): Uint8Array {
  if (v instanceof Uint8Array) return v;
  if (Array.isArray(v)) return new Uint8Array(v as number[]);
  if (typeof v !== "string") throw new Error(`${path}: expected bytes, got ${describeValue(v)}`);
  // Hardware addresses render as colon-separated hex (net.HardwareAddr.String()).
  if (/^[0-9a-f]{2}(:[0-9a-f]{2})+$/i.test(v)) return Uint8Array.from(v.split(":"), (h) => parseInt(h, 16));
  // Other []byte values render as base64; anything that is not base64 is taken as text.
  if (v.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(v)) return Uint8Array.from(Buffer.from(v, "base64"));
  return new TextEncoder().encode(v);
}

function enumValue(e: DescEnum, v: unknown, path: string, opts: SpecToProtoOptions): number {
  if (typeof v === "number") return v;
  if (typeof v === "bigint") return Number(v);
  if (typeof v !== "string") throw new Error(`${path}: expected ${e.typeName} text, got ${describeValue(v)}`);
  const extra = opts.enums?.[e.typeName]?.[v];
  if (extra !== undefined) return extra;
  if (/^-?\d+$/.test(v)) return Number(v);
  const n = matchEnum(e, v);
  if (n === undefined) {
    throw new Error(`${path}: ${JSON.stringify(v)} matches no value of ${e.typeName} (pass opts.enums for irregular names)`);
  }
  return n;
}

/**
 * Enum text → number: the text must equal the trailing `_`-separated words of a value name, compared
 * without case, spaces, dashes or underscores (`running` → MACHINE_STAGE_RUNNING, `shutting down` →
 * MACHINE_STAGE_SHUTTING_DOWN, `controlplane` → TYPE_CONTROL_PLANE). When several values match, the
 * one with the fewest leading words dropped wins (`down` → OPER_STATE_DOWN, not OPER_STATE_LOWER_LAYER_DOWN).
 */
function matchEnum(e: DescEnum, text: string): number | undefined {
  const want = norm(text);
  let best: { dropped: number; number: number } | undefined;
  let ambiguous = false;
  for (const value of e.values) {
    const words = value.name.split("_");
    for (let dropped = 0; dropped < words.length; dropped++) {
      if (norm(words.slice(dropped).join("")) !== want) continue;
      if (!best || dropped < best.dropped) {
        best = { dropped, number: value.number };
        ambiguous = false;
      } else if (dropped === best.dropped && value.number !== best.number) {
        ambiguous = true;
      }
      break;
    }
  }
  if (ambiguous) throw new Error(`${JSON.stringify(text)} is ambiguous in ${e.typeName}`);
  return best?.number;
}

/** Init values for well-known and Talos common messages given in their text form; undefined = not special. */
function wellKnown(desc: DescMessage, v: unknown): unknown {
  const text = typeof v === "string";
  switch (desc.typeName) {
    case "google.protobuf.Timestamp":
      return v instanceof Date || text || typeof v === "number" ? timestamp(v as Date | string | number) : undefined;
    case "google.protobuf.Duration":
      return text || typeof v === "number" || typeof v === "bigint" ? duration(v as string | number | bigint) : undefined;
    case "google.protobuf.Struct":
      return typeof v === "object" && v !== null && !Array.isArray(v) ? toJson(v) : undefined;
    case "common.NetIP":
      if (v instanceof Uint8Array) return { ip: v };
      return text ? { ip: addrBytes(v, true) } : undefined;
    case "common.NetIPPrefix": {
      if (!text) return undefined;
      // Go's zero netip.Prefix prints as "" and encodes with Bits() == -1 (e.g. a default route's dst).
      if (v === "") return { ip: new Uint8Array(), prefixLength: -1 };
      const slash = v.lastIndexOf("/");
      if (slash < 0) throw new Error(`invalid prefix ${JSON.stringify(v)}`);
      return { ip: addrBytes(v.slice(0, slash), false), prefixLength: Number(v.slice(slash + 1)) };
    }
    case "common.NetIPPort": {
      if (!text) return undefined;
      const m = /^\[(.+)\]:(\d+)$/.exec(v) ?? /^([^:]+):(\d+)$/.exec(v);
      if (!m) throw new Error(`invalid address:port ${JSON.stringify(v)}`);
      return { ip: addrBytes(m[1], true), port: Number(m[2]) };
    }
    case "common.URL":
      return text ? { fullPath: v } : undefined;
  }
  return undefined;
}

function timestamp(v: Date | string | number): { seconds: bigint; nanos: number } {
  if (typeof v === "string") {
    // Keep nanoseconds, which Date would truncate: RFC 3339 with up to 9 fractional digits.
    const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/i.exec(v.trim());
    const ms = m ? Date.parse(`${m[1]}${m[3]}`) : NaN;
    if (!m || Number.isNaN(ms)) throw new Error(`invalid timestamp ${JSON.stringify(v)}`);
    return { seconds: BigInt(ms / 1000), nanos: Number((m[2] ?? "").padEnd(9, "0")) };
  }
  const ms = v instanceof Date ? v.getTime() : v;
  const seconds = Math.floor(ms / 1000);
  return { seconds: BigInt(seconds), nanos: Math.round((ms - seconds * 1000) * 1e6) };
}

const UNIT_NS: Record<string, bigint> = {
  ns: 1n, us: 1000n, "µs": 1000n, "μs": 1000n, ms: 1_000_000n, s: 1_000_000_000n, m: 60_000_000_000n, h: 3_600_000_000_000n,
};

/** Go duration text (`1m30s`, `1.5h`, `-300ms`, `0`); a bigint is nanoseconds, a number milliseconds. */
export function duration(v: string | number | bigint): { seconds: bigint; nanos: number } {
  let total: bigint;
  if (typeof v === "bigint") total = v;
  else if (typeof v === "number") total = BigInt(Math.round(v * 1e6));
  else {
    const s = v.trim();
    const sign = s.startsWith("-") ? -1n : 1n;
    const body = s.replace(/^[+-]/, "");
    total = 0n;
    if (body !== "0") {
      const re = /(\d*)(?:\.(\d*))?(ns|us|µs|μs|ms|s|m|h)/gy;
      let consumed = 0;
      for (let m = re.exec(body); m; m = re.exec(body)) {
        if (m[1] === "" && !m[2]) break;
        const unit = UNIT_NS[m[3]];
        const frac = m[2] ?? "";
        total += BigInt(m[1] || "0") * unit + (frac ? (BigInt(frac) * unit) / 10n ** BigInt(frac.length) : 0n);
        consumed = re.lastIndex;
      }
      if (consumed !== body.length || body === "") throw new Error(`invalid duration ${JSON.stringify(v)}`);
    }
    total *= sign;
  }
  const seconds = total / 1_000_000_000n;
  return { seconds, nanos: Number(total - seconds * 1_000_000_000n) };
}

/** Plain object → JSON for google.protobuf.Struct (Dates as RFC 3339, bigints as numbers, bytes as base64). */
function toJson(v: object): JsonObject {
  const conv = (x: unknown): JsonValue | undefined => {
    if (x === undefined) return undefined;
    if (x === null || typeof x === "string" || typeof x === "boolean") return x;
    if (typeof x === "number") return x;
    if (typeof x === "bigint") return Number(x);
    if (x instanceof Date) return x.toISOString();
    if (x instanceof Uint8Array) return Buffer.from(x).toString("base64");
    if (Array.isArray(x)) return x.map((i) => conv(i) ?? null);
    const out: JsonObject = {};
    for (const [k, i] of Object.entries(x as object)) {
      const c = conv(i);
      if (c !== undefined) out[k] = c;
    }
    return out;
  };
  return conv(v) as JsonObject;
}

/**
 * IP text → the bytes Go's netip.Addr.MarshalBinary produces: 4 bytes for IPv4, 16 for IPv6 (plus the
 * zone for NetIP; prefixes drop it), nothing for the empty (invalid) address.
 */
function addrBytes(text: string, keepZone: boolean): Uint8Array {
  if (text === "") return new Uint8Array();
  const [addr, zone] = text.split("%", 2);
  const ip = parseIP(addr);
  if (!ip) throw new Error(`invalid IP address ${JSON.stringify(text)}`);
  if (!keepZone || !zone || ip.length === 4) return ip;
  const z = new TextEncoder().encode(zone);
  const out = new Uint8Array(16 + z.length);
  out.set(ip);
  out.set(z, 16);
  return out;
}

export function parseIP(s: string): Uint8Array | undefined {
  const v4 = parseIPv4(s);
  if (v4) return v4;
  if (!s.includes(":")) return undefined;
  let text = s;
  const lastColon = s.lastIndexOf(":");
  const last = s.slice(lastColon + 1);
  if (last.includes(".")) {
    // Embedded IPv4 (`::ffff:1.2.3.4`): rewrite it as the two hex groups it stands for.
    const e = parseIPv4(last);
    if (!e) return undefined;
    text = `${s.slice(0, lastColon + 1)}${((e[0] << 8) | e[1]).toString(16)}:${((e[2] << 8) | e[3]).toString(16)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const words = (p: string) => (p === "" ? [] : p.split(":").map((g) => (/^[0-9a-f]{1,4}$/i.test(g) ? parseInt(g, 16) : NaN)));
  const head = words(halves[0]);
  const tail = halves.length === 2 ? words(halves[1]) : [];
  if ([...head, ...tail].some(Number.isNaN)) return undefined;
  const zeros = 8 - head.length - tail.length;
  if (halves.length === 1 ? zeros !== 0 : zeros < 1) return undefined;
  const all: number[] = [...head, ...new Array<number>(halves.length === 2 ? zeros : 0).fill(0), ...tail];
  const out = new Uint8Array(16);
  all.forEach((w, i) => {
    out[2 * i] = w >> 8;
    out[2 * i + 1] = w & 0xff;
  });
  return out;
}

function parseIPv4(s: string): Uint8Array | undefined {
  const parts = s.split(".");
  if (parts.length !== 4 || parts.some((p) => !/^(0|[1-9]\d{0,2})$/.test(p) || Number(p) > 255)) return undefined;
  return Uint8Array.from(parts, Number);
}

function describeValue(v: unknown): string {
  if (v instanceof Uint8Array) return "bytes";
  return typeof v === "object" ? JSON.stringify(v) : `${typeof v} ${String(v)}`;
}
