/**
 * Bounds of config reading (src/machinery/config/limits.ts): encodings other than UTF-8 and oversized or
 * over-complex inputs are refused at once with a short message naming where; work grows linearly with the input;
 * every error text stays bounded.
 */
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../../src/machinery/config/index.js";
import { LIMITS, MAX_ERROR_TEXT } from "../../../src/machinery/config/limits.js";
import { yamlWork } from "../../../src/machinery/config/yaml.js";
import { fixture } from "./fixtures.js";

function loadError(input: string | Uint8Array): ConfigError {
  try {
    loadConfig(input);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    expect((e as Error).message.length).toBeLessThanOrEqual(MAX_ERROR_TEXT);
    return e as ConfigError;
  }
  throw new Error("expected the config to be refused");
}

/** Loads and returns the work counter (nodes, keys and tokens visited by the checks). */
function work(input: string): { steps: number; error?: ConfigError } {
  yamlWork.steps = 0;
  try {
    loadConfig(input);
    return { steps: yamlWork.steps };
  } catch (e) {
    return { steps: yamlWork.steps, error: e as ConfigError };
  }
}

const unknownKeys = (n: number) => `version: v1alpha1\nmachine:\n  type: worker\n${Array.from({ length: n }, (_, i) => `  k${i}: 1\n`).join("")}`;

describe("encodings", () => {
  const cp = fixture("configs", "controlplane.yaml");

  it("refuses UTF-16 and UTF-32 at once, with or without a byte order mark", () => {
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(cp, "utf16le")]);
    expect(loadError(le).message).toBe("config is encoded as UTF-16 (little-endian byte order mark); only UTF-8 is accepted");
    const be = Buffer.from(le);
    be.swap16();
    expect(loadError(be).message).toBe("config is encoded as UTF-16 (big-endian byte order mark); only UTF-8 is accepted");
    expect(loadError(Buffer.from([0xff, 0xfe, 0, 0, 0x76, 0, 0, 0])).message).toMatch(/UTF-32/);
    // Without a BOM, UTF-16 of ASCII is NUL bytes between the letters.
    expect(loadError(Buffer.from(cp, "utf16le")).message).toBe(
      "config contains a NUL byte at offset 1; only UTF-8 text is accepted (is it UTF-16 or binary?)",
    );
  });

  it("refuses invalid UTF-8 and control characters, naming the position", () => {
    expect(loadError(Buffer.from([0x61, 0x3a, 0x20, 0xc3, 0x28])).message).toBe("config is not valid UTF-8 text");
    const e = loadError("version: v1alpha1\nmachine:\n  type: wor\u0001ker\n");
    expect(e.message).toBe("config contains the control character U+0001 at line 3, column 12; YAML allows only printable characters");
    expect(e.line).toBe(3);
    expect(loadError("a: b\u0000").message).toMatch(/NUL character/);
  });

  it("accepts a UTF-8 byte order mark and non-ASCII text", () => {
    const cfg = loadConfig(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from("version: v1alpha1\nmachine:\n  type: worker\n  network:\n    hostname: héllo\n")]));
    expect(cfg.hostname()).toBe("héllo");
  });
});

describe("sizes and counts", () => {
  it("refuses a config over 4 MiB before reading it", () => {
    const big = `version: v1alpha1\nmachine:\n  files:\n  - content: ${"x".repeat(20 * 1024 * 1024)}\n`;
    const before = work(big);
    expect(before.error?.message).toBe("config is 20 MiB, more than the 4 MiB a machine config may be");
    expect(before.steps).toBe(0);
    expect(loadError(new TextEncoder().encode(big)).message).toMatch(/^config is 20 MiB/);
  });

  it("refuses a string over 2 MiB and a 64 KiB key, with a clipped path", () => {
    const s = loadError(`version: v1alpha1\nmachine:\n  files:\n  - content: ${"x".repeat(3 * 1024 * 1024)}\n`);
    expect(s.message).toBe("machine.files[0].content: a string of 3 MiB is longer than the 2 MiB allowed (line 4, column 14)");
    expect(s.path).toBe("machine.files[0].content");
    // An explicit key (`? key`): YAML itself caps implicit keys at 1024 characters.
    const k = loadError(`version: v1alpha1\nmachine:\n  ? ${"k".repeat(64 * 1024)}\n  : 1\n`);
    expect(k.message).toMatch(/^machine: a map key of 64 KiB is longer than the 1 KiB allowed \("k{20}… \(65536 characters\)"\) \(line 3, column 5\)$/);
    expect(loadError(`version: v1alpha1\nmachine:\n  ${"k".repeat(64 * 1024)}: 1\n`).message).toMatch(/^malformed YAML at line 3, column 3: /);
  });

  it("refuses more than 256 documents", () => {
    const docs = Array.from({ length: 300 }, (_, i) => `apiVersion: v1alpha1\nkind: KmsgLogConfig\nname: k${i}\nurl: udp://127.0.0.1:1\n`).join("---\n");
    expect(loadError(docs).message).toMatch(/^more than 256 documents; a machine config may have at most 256 \(line \d+, column 1\)$/);
  });

  it("refuses deep nesting before the recursive composer sees it (flow and block)", () => {
    // 20,000 nested brackets used to overflow the stack and then exhaust memory formatting the error.
    const flow = loadError(`a: ${"[".repeat(20_000)}${"]".repeat(20_000)}`);
    expect(flow.message).toBe(`YAML is nested more than ${LIMITS.depth} levels deep (line 1, column 67)`);
    let block = "";
    for (let i = 0; i < 100; i++) block += `${" ".repeat(i)}k${i}:\n`;
    expect(loadError(block).message).toMatch(/^YAML is nested more than 64 levels deep/);
  });

  it("refuses more than the token budget, early and with a short message", () => {
    const r = work(unknownKeys(100_000));
    expect(r.error?.message).toMatch(/^the config has more than 100000 YAML tokens \(keys, values, indentation, line breaks, comments\); a generated config has about 1,500 \(line \d+, column \d+\)$/);
    // Refused as soon as the budget is spent: the rest of the input is never looked at.
    expect(r.steps).toBe(LIMITS.tokens + 1);
  });
});

describe("aliases", () => {
  it("refuses alias expansion bombs by the size they would expand to", () => {
    const lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"];
    for (let i = 1; i < 9; i++) lines.push(`a${i}: &a${i} [${Array(10).fill(`*a${i - 1}`).join(", ")}]`);
    const e = loadError(`${lines.join("\n")}\n`);
    expect(e.message).toMatch(/^a\d(\[\d+\])?: the document has more than 200000 entries \(after expanding aliases\)/);
    // Each level multiplies the text: a 1 MiB string through three levels of ten aliases would be 1 GiB.
    const text = `s: &s ${"y".repeat(1024 * 1024)}\nl1: &l1 [${Array(10).fill("*s").join(",")}]\nl2: [${Array(10).fill("*l1").join(",")}]\n`;
    expect(loadError(text).message).toMatch(/^l1\[\d+\]: the document holds more than 8 MiB of text \(after expanding aliases\)/);
  });

  it("refuses recursive aliases and too many aliases", () => {
    expect(loadError("a: &a\n  b: *a\n").message).toMatch(/^a\.b: alias \*a refers to a node that contains it/);
    const many = `x: &x 1\nl: [${Array(1500).fill("*x").join(",")}]\n`;
    expect(loadError(many).message).toMatch(/^l\[1000\]: more than 1000 aliases/);
  });

  it("keeps merge keys and ordinary aliases working", () => {
    const cfg = loadConfig("version: v1alpha1\nmachine:\n  type: worker\n  nodeLabels: &l {a: b}\n  nodeAnnotations:\n    <<: *l\n    c: d\n");
    expect(cfg.machine?.nodeAnnotations).toEqual({ a: "b", c: "d" });
  });
});

describe("linear work and bounded messages", () => {
  it("unknown keys: work grows linearly, and the message lists a few and counts the rest", () => {
    const small = work(unknownKeys(1_000));
    const large = work(unknownKeys(10_000));
    for (const r of [small, large]) expect(r.error?.message.length).toBeLessThanOrEqual(MAX_ERROR_TEXT);
    expect(small.error?.issues).toHaveLength(1_000);
    expect(large.error?.issues).toHaveLength(10_000);
    expect(large.error?.message.split("\n")).toHaveLength(LIMITS.errorProblems + 1);
    expect(large.error?.message).toMatch(/^machine\.k0: unknown keys found during decoding\n[\s\S]*\n\.\.\. and 9988 more problems$/);
    // Ten times the keys, about ten times the work (the quadratic version did a thousand times).
    const ratio = large.steps / small.steps;
    expect(ratio).toBeGreaterThan(8);
    expect(ratio).toBeLessThan(12);
  });

  it("duplicate keys are found in linear work too, with upstream's message", () => {
    const dup = (n: number) => `${Array.from({ length: n }, (_, i) => `k${i}: 1\n`).join("")}k0: 2\n`;
    const small = work(dup(1_000));
    const large = work(dup(10_000));
    expect(large.error?.message).toBe("malformed YAML at line 10001, column 1: Map keys must be unique");
    const ratio = large.steps / small.steps;
    expect(ratio).toBeGreaterThan(8);
    expect(ratio).toBeLessThan(12);
  });

  it("values echoed in messages are clipped", () => {
    const e = loadError(`version: v1alpha1\nmachine:\n  network:\n    interfaces:\n    - mtu: ${"9".repeat(5000)}x\n`);
    expect(e.message.length).toBeLessThan(300);
    expect(e.message).toMatch(/^machine\.network\.interfaces\[0\]\.mtu: expected number, got string "9{80}"… \(5001 characters\)/);
  });
});
