import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { directYaml, documentYaml, specToYaml } from "../../../src/machinery/resources/yaml.js";

describe("specToYaml", () => {
  it("lays out like Go's yaml.v3: 4-space indent, indented sequences, insertion order", () => {
    const spec = {
      stage: "booting",
      status: { ready: false, unmetConditions: [{ name: "time", reason: "time is not synced" }] },
      addresses: ["10.5.0.2", "fd00::1"],
      empty: [],
      none: {},
      missing: null,
      skipped: undefined,
    };
    expect(specToYaml(spec)).toBe(
      [
        "stage: booting",
        "status:",
        "    ready: false",
        "    unmetConditions:",
        "        - name: time",
        "          reason: time is not synced",
        "addresses:",
        "    - 10.5.0.2",
        "    - fd00::1",
        "empty: []",
        "none: {}",
        "missing: null",
        "",
      ].join("\n"),
    );
  });

  // Expected texts below are what go.yaml.in/yaml/v4 (the version COSI v1.16.2 uses) prints for the same values.
  it("quotes like Go: double quotes for other-typed text, single quotes when plain is impossible", () => {
    const out = specToYaml({
      num: "123",
      oldBool: "yes",
      on: "on",
      nul: "null",
      empty: "",
      hex: "0x1f",
      float: "1e3",
      sexagesimal: "1:20",
      date: "2024-01-01",
      dash: "- x",
      colon: "a: b",
      star: "*star",
      lead: " lead",
      mac: "aa:bb:cc:dd:ee:ff",
      prefix: "10.5.0.2/24",
      shuttingDown: "shutting down",
      tab: "a\tb",
      trail: "trail ",
      apostrophe: "it's",
      tilde: "~",
      upperNo: "No",
    });
    const lines = out.trimEnd().split("\n");
    expect(lines).toEqual([
      'num: "123"',
      'oldBool: "yes"',
      '"on": "on"',
      'nul: "null"',
      'empty: ""',
      'hex: "0x1f"',
      'float: "1e3"',
      'sexagesimal: "1:20"',
      'date: "2024-01-01"',
      "dash: '- x'",
      "colon: 'a: b'",
      "star: '*star'",
      "lead: ' lead'",
      "mac: aa:bb:cc:dd:ee:ff",
      "prefix: 10.5.0.2/24",
      "shuttingDown: shutting down",
      'tab: "a\\tb"',
      "trail: 'trail '",
      "apostrophe: it's",
      'tilde: "~"',
      'upperNo: "No"',
    ]);
  });

  it("round-trips tricky values through a YAML parser as the same strings and scalars", () => {
    const spec = {
      strings: ["123", "yes", "No", "~", ".inf", "-1.5", "true", "0o17", "a #b", "it's", '"q"', "x: y", "[a]", "{b}", "%c", "@d", "`e`"],
      numbers: [0, -3, 1.5, 10n ** 20n],
      bools: [true, false],
      nested: { deep: { list: [{ a: 1 }, { b: [] }] } },
    };
    const back = parse(specToYaml(spec), { intAsBigInt: true });
    expect(back.strings).toEqual(spec.strings);
    expect(back.numbers).toEqual([0n, -3n, 1.5, 10n ** 20n]);
    expect(back.bools).toEqual([true, false]);
    expect(back.nested).toEqual({ deep: { list: [{ a: 1n }, { b: [] }] } });
  });

  it("writes times as unquoted RFC 3339 with trimmed fractions", () => {
    expect(specToYaml({ t: new Date("2024-01-02T03:04:05.120Z"), z: new Date(0) })).toBe(
      "t: 2024-01-02T03:04:05.12Z\nz: 1970-01-01T00:00:00Z\n",
    );
  });

  it("never folds long lines", () => {
    const long = "word ".repeat(60).trim();
    expect(specToYaml({ long })).toBe(`long: ${long}\n`);
  });

  it("writes multi-line strings as literal blocks, nested and at the document root", () => {
    expect(specToYaml({ script: "a\nb\n" })).toBe("script: |\n    a\n    b\n");
    const config = "version: v1alpha1\nmachine:\n  type: controlplane\n\ncluster: {}\n";
    const doc = specToYaml(config);
    expect(doc).toBe("|\n    version: v1alpha1\n    machine:\n      type: controlplane\n\n    cluster: {}\n");
    expect(parse(doc)).toBe(config);
    for (const s of ["a\nb", "a\n\n", "  indented\nx\n", "\nleading blank\n"]) {
      expect(parse(specToYaml(s)), JSON.stringify(s)).toBe(s);
    }
    expect(specToYaml("a\nb")).toBe("|-\n    a\n    b\n");
    expect(specToYaml("  indented\nx\n")).toBe("|4\n      indented\n    x\n");
    expect(specToYaml("\nleading blank\n")).toBe("|\n\n    leading blank\n");
    expect(specToYaml("a\n\n")).toBe("|+\n    a\n\n");
    expect(specToYaml({ k: "x\ny" })).toBe("k: |-\n    x\n    y\n");
  });

  it("writes bytes as a list of numbers, as Go prints []byte", () => {
    expect(specToYaml({ b: new Uint8Array([1, 2, 3]) })).toBe("b:\n    - 1\n    - 2\n    - 3\n");
  });

  it("writes bare scalar specs (MachineType) as a single scalar document", () => {
    expect(specToYaml("controlplane")).toBe("controlplane\n");
    expect(specToYaml("")).toBe('""\n');
  });
});

describe("the direct YAML writer", () => {
  // A small deterministic PRNG so a failure reproduces.
  let seed = 12345;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)];
  const KEYS = ["a", "name", "on", "yes", "123", "x.y", "a-b", "weird key", "k:", "-k", "#", "~", "null", "Foo_Bar", "a/b", "linkName", "_x", "é"];
  const STRINGS = [
    "", "x", "plain text", "it's", '"q"', "a\tb", "two\nlines", " lead", "trail ", "---x", "...", "%c", "a #b", "a#b", "- x", "-x", "?", "-", ":",
    "x: y", "x:y", "[a]", "{b}", "@d", "`e`", "10.5.0.2/24", "fe80::1", "aa:bb:cc", "http://x:80/p", "2024-01-01", "2024-01-01T00:00:00Z",
    "1:20", "0x1f", "0o17", "017", "1e3", "-1.5", ".5", ".inf", "-.inf", ".nan", "NaN", "y", "Y", "n", "TRUE", "off", "On", "~", "null", "<<",
    "é", "a\\b", "back\\slash", "semi;colon", "comma,x", "ends:", "*star", "&anchor", "!tag", "|pipe", ">gt", "'quoted'", "x'y\"z",
  ];
  const scalar = (): unknown => {
    const r = rnd();
    if (r < 0.55) return pick(STRINGS);
    if (r < 0.7) return pick([0, 1, -3, 1.5, 0.1, 1e21, -0, Number.NaN, 2 ** 53, 42, -7.25]);
    if (r < 0.78) return rnd() < 0.5;
    if (r < 0.83) return null;
    if (r < 0.87) return new Date(Math.floor(rnd() * 2e12));
    if (r < 0.9) return 10n ** BigInt(Math.floor(rnd() * 25));
    if (r < 0.93) return new Uint8Array([1, 2, 3].slice(0, Math.floor(rnd() * 4)));
    return undefined;
  };
  const value = (depth: number): unknown => {
    const r = rnd();
    if (depth <= 0 || r < 0.5) return scalar();
    if (r < 0.75) return Array.from({ length: Math.floor(rnd() * 4) }, () => value(depth - 1));
    return object(depth - 1);
  };
  const object = (depth: number): Record<string, unknown> =>
    Object.fromEntries(Array.from({ length: Math.floor(rnd() * 5) }, () => [pick(KEYS), value(depth)]));

  it("writes every scalar and key exactly as the document model does, whenever it answers", () => {
    const check = (spec: unknown) => {
      const fast = directYaml(spec);
      if (fast !== undefined) expect(fast, JSON.stringify(spec, (_k, v) => (typeof v === "bigint" ? `${v}n` : v))).toBe(documentYaml(spec));
    };
    for (const s of [...STRINGS, 0, 1.5, -0, 1e21, Number.NaN, true, null, 10n ** 20n, new Date(0)]) {
      check({ k: s });
      check({ k: [s] });
      check({ k: [{ a: s, b: s }] });
      check({ k: { nested: s } });
    }
    for (const k of KEYS) check({ [k]: "v" });
  });

  it("writes exactly what the document model writes for random specs, whenever it answers", () => {
    let direct = 0;
    for (let i = 0; i < 4000; i++) {
      const spec = object(3);
      const fast = directYaml(spec);
      if (fast === undefined) continue;
      direct++;
      expect(fast, JSON.stringify(spec, (_k, v) => (typeof v === "bigint" ? `${v}n` : v))).toBe(documentYaml(spec));
    }
    // The generator is deliberately nasty; still, a good share must take the direct path.
    expect(direct).toBeGreaterThan(250);
  });

  it("takes the direct path for the ordinary resource shapes", () => {
    const specs = [
      { address: "10.5.0.2/24", local: "10.5.0.2", linkIndex: 2, linkName: "eth0", family: "inet4", scope: "global", flags: "permanent", priority: 0 },
      { source: "/dev/vda5", target: "/var", filesystemType: "xfs", options: ["rw", "relatime"], encrypted: false },
      { stage: "running", status: { ready: true, unmetConditions: [] } },
      { addresses: ["10.5.0.2/24", "fd00::2/64"], sortAlgorithm: "v1" },
      { family: "inet4", dst: "", src: "", gateway: "10.5.0.1", outLinkIndex: 2, outLinkName: "eth0", table: "main", priority: 1024, scope: "global", type: "unicast", flags: "", protocol: "static" },
    ];
    for (const s of specs) {
      expect(directYaml(s), JSON.stringify(s)).toBe(documentYaml(s));
    }
  });
});
