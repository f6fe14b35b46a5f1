import { describe, expect, it } from "vitest";
import { diffConfigs } from "../../../src/machinery/config/index.js";
import { DIFF_LIMITS, diffWork } from "../../../src/machinery/config/diff.js";

/** Longest common subsequence length, by dynamic programming (the reference the diff must match). */
function lcsLength(a: string[], b: string[]): number {
  const dp: number[][] = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) dp[i][j] = a[i] === b[j] ? dp[i + 1][j + 1] + 1 : Math.max(dp[i + 1][j], dp[i][j + 1]);
  }
  return dp[0][0];
}

/** Rebuilds the new text from the old one and the hunks; also returns the number of deleted lines. */
function applyUnified(old: string[], diff: string): { lines: string[]; deleted: number } {
  const body = diff.split("\n").slice(2, -1);
  const out: string[] = [];
  let i = 0;
  let deleted = 0;
  for (const l of body) {
    const h = /^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@$/.exec(l);
    if (h) {
      const start = Number(h[1]) + (h[2] === "0" ? 1 : 0);
      while (i < start - 1) out.push(old[i++]);
      continue;
    }
    const text = l.slice(1);
    if (l[0] === "+") out.push(text);
    else {
      expect(old[i]).toBe(text);
      if (l[0] === " ") out.push(text);
      else deleted++;
      i++;
    }
  }
  while (i < old.length) out.push(old[i++]);
  return { lines: out, deleted };
}

describe("diffConfigs", () => {
  const v1 = "version: v1alpha1\nmachine:\n    type: controlplane\n    token: foo\n    certSANs: []\ncluster: null\n";

  it('says "No changes." for equal texts', () => {
    expect(diffConfigs(v1, v1)).toBe("No changes.");
  });

  it("matches upstream's format for a changed field", () => {
    expect(diffConfigs(v1, v1.replace("controlplane", "worker"))).toBe(
      "--- a\n+++ b\n@@ -1,6 +1,6 @@\n version: v1alpha1\n machine:\n-    type: controlplane\n+    type: worker\n     token: foo\n     certSANs: []\n cluster: null\n",
    );
  });

  it("matches upstream's format for an added document", () => {
    const more = `${v1}---\napiVersion: v1alpha1\nkind: SideroLinkConfig\napiUrl: https://example.com\n`;
    expect(diffConfigs(v1, more)).toBe(
      "--- a\n+++ b\n@@ -4,3 +4,7 @@\n     token: foo\n     certSANs: []\n cluster: null\n+---\n+apiVersion: v1alpha1\n+kind: SideroLinkConfig\n+apiUrl: https://example.com\n",
    );
  });

  it("diffs against nothing", () => {
    expect(diffConfigs("", "a\nb\n")).toBe("--- a\n+++ b\n@@ -0,0 +1,2 @@\n+a\n+b\n");
  });

  it("splits distant changes into separate hunks", () => {
    const a = Array.from({ length: 30 }, (_, i) => `line ${i}`);
    const b = [...a];
    b[2] = "changed 2";
    b[25] = "changed 25";
    const d = diffConfigs(`${a.join("\n")}\n`, `${b.join("\n")}\n`);
    expect(d.match(/^@@ .* @@$/gm)).toEqual(["@@ -1,6 +1,6 @@", "@@ -23,7 +23,7 @@"]);
  });

  it("produces a minimal (LCS) edit script that rebuilds the new text", () => {
    let seed = 7;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    for (let t = 0; t < 300; t++) {
      const gen = () => Array.from({ length: rnd(14) }, () => "abcde"[rnd(5)]);
      const a = gen();
      const b = gen();
      const d = diffConfigs(a.map((x) => `${x}\n`).join(""), b.map((x) => `${x}\n`).join(""));
      if (a.join() === b.join()) {
        expect(d).toBe("No changes.");
        continue;
      }
      const { lines, deleted } = applyUnified(a, d);
      expect(lines).toEqual(b);
      expect(a.length - deleted).toBe(lcsLength(a, b));
    }
  });

  it("bounds the work, memory and output on large unrelated texts, and stays a correct diff", () => {
    // Two unrelated 20,000-line configs: an unbounded Myers search would take (N+M)·D = 8e8 steps and D² memory.
    const a = Array.from({ length: 20_000 }, (_, i) => `a: ${i}`);
    const b = Array.from({ length: 20_000 }, (_, i) => `b: ${i}`);
    const d = diffConfigs(`${a.join("\n")}\n`, `${b.join("\n")}\n`);
    expect(diffWork.steps).toBeLessThanOrEqual(DIFF_LIMITS.maxWork + 2 * DIFF_LIMITS.maxEdits + 1);
    expect(applyUnified(a, d).lines).toEqual(b);
    expect(d.length).toBeLessThanOrEqual(DIFF_LIMITS.maxOutputChars);

    const big = Array.from({ length: 70_000 }, (_, i) => `x${i}`.padEnd(40, "."));
    const long = diffConfigs(`${big.join("\n")}\n`, "");
    expect(long.length).toBeLessThanOrEqual(DIFF_LIMITS.maxOutputChars + 100);
    expect(long).toMatch(/\n\.\.\. diff truncated at 1048576 characters\n$/);
  });

  it("still finds the minimal script for a few edits in a large text", () => {
    const a = Array.from({ length: 30_000 }, (_, i) => `line ${i}`);
    const b = [...a];
    b.splice(100, 1, "changed");
    b.splice(25_000, 0, "inserted");
    const d = diffConfigs(`${a.join("\n")}\n`, `${b.join("\n")}\n`);
    expect(d.match(/^[-+].*/gm)).toEqual(["--- a", "+++ b", "-line 100", "+changed", "+inserted"]);
  });
});
