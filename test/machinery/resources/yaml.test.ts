import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { specToYaml } from "../../../src/machinery/resources/yaml.js";

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
