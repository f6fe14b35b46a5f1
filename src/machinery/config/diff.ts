/**
 * Line diff of two config texts in unified format, as `apply-config --dry-run` shows it ("--- a", "+++ b", hunks
 * with 3 lines of context). The edit script is a longest-common-subsequence one, found with Myers' O((N+M)·D)
 * algorithm after trimming the common head and tail, so typical small config edits stay cheap.
 */

const CONTEXT = 3;
const MAX_LINES = 75_000;

type Op = { kind: " " | "-" | "+"; text: string };

function splitLines(s: string): string[] {
  if (s === "") return [];
  const lines = s.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

/** Myers' shortest edit script between a and b (both already trimmed of common head/tail). */
function editScript(a: string[], b: string[]): Op[] {
  const n = a.length;
  const m = b.length;
  const max = n + m;
  const off = max + 1;
  let v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  let found = false;
  for (let d = 0; d <= max && !found; d++) {
    trace.push(v);
    v = v.slice();
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[off + k - 1] < v[off + k + 1]) ? v[off + k + 1] : v[off + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[off + k] = x;
      if (x >= n && y >= m) {
        found = true;
        break;
      }
    }
  }
  // trace[d] is the furthest-reaching state before step d; walk it backwards to recover the path.
  const ops: Op[] = [];
  let x = n;
  let y = m;
  for (let d = trace.length - 1; d > 0; d--) {
    const vp = trace[d];
    const k = x - y;
    const prevK = k === -d || (k !== d && vp[off + k - 1] < vp[off + k + 1]) ? k + 1 : k - 1;
    const prevX = vp[off + prevK];
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) ops.push({ kind: " ", text: a[--x] }), y--;
    if (x === prevX) ops.push({ kind: "+", text: b[--y] });
    else ops.push({ kind: "-", text: a[--x] });
  }
  while (x > 0 && y > 0) ops.push({ kind: " ", text: a[--x] }), y--;
  return ops.reverse();
}

function range(start: number, count: number): string {
  if (count === 0) return `${start - 1},0`;
  return count === 1 ? `${start}` : `${start},${count}`;
}

/** Unified diff of two texts; "" when they are equal. */
export function unifiedDiff(oldText: string, newText: string): string {
  if (oldText === newText) return "";
  const a = splitLines(oldText);
  const b = splitLines(newText);
  if (a.length + b.length > MAX_LINES) return `@@ -1,${a.length} +1,${b.length} @@ diff too large to display\n`;
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const ops: Op[] = [
    ...a.slice(0, head).map((text) => ({ kind: " " as const, text })),
    ...editScript(a.slice(head, a.length - tail), b.slice(head, b.length - tail)),
    ...a.slice(a.length - tail).map((text) => ({ kind: " " as const, text })),
  ];
  if (!ops.some((o) => o.kind !== " ")) return ""; // only a trailing-newline difference

  let out = "--- a\n+++ b\n";
  let i = 0;
  // Line numbers (1-based) of ops[i] in a and b.
  const posA: number[] = [];
  const posB: number[] = [];
  let la = 1;
  let lb = 1;
  for (const o of ops) {
    posA.push(la);
    posB.push(lb);
    if (o.kind !== "+") la++;
    if (o.kind !== "-") lb++;
  }
  while (i < ops.length) {
    while (i < ops.length && ops[i].kind === " ") i++;
    if (i >= ops.length) break;
    const start = Math.max(0, i - CONTEXT);
    let end = i;
    // Extend the hunk while the next change is within 2*CONTEXT unchanged lines.
    for (;;) {
      while (end < ops.length && ops[end].kind !== " ") end++;
      let gap = end;
      while (gap < ops.length && ops[gap].kind === " ") gap++;
      if (gap < ops.length && gap - end <= 2 * CONTEXT) end = gap;
      else {
        end = Math.min(ops.length, end + CONTEXT);
        break;
      }
    }
    const hunk = ops.slice(start, end);
    const countA = hunk.filter((o) => o.kind !== "+").length;
    const countB = hunk.filter((o) => o.kind !== "-").length;
    out += `@@ -${range(posA[start], countA)} +${range(posB[start], countB)} @@\n`;
    for (const o of hunk) out += `${o.kind}${o.text}\n`;
    i = end;
  }
  return out;
}

/** Diff for `apply-config --dry-run`: the unified diff, or "No changes." when the texts are equal. */
export function diffConfigs(oldText: string, newText: string): string {
  return unifiedDiff(oldText, newText) || "No changes.";
}
