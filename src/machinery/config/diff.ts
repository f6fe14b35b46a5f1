/**
 * Line diff of two config texts in unified format, as `apply-config --dry-run` shows it ("--- a", "+++ b", hunks
 * with 3 lines of context). The edit script is a longest-common-subsequence one, found with Myers' O((N+M)·D)
 * algorithm after trimming the common head and tail, so typical small config edits stay cheap; time, memory and
 * output are bounded (DIFF_LIMITS) so that two large unrelated configs cannot stall or exhaust the process.
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

/**
 * Bounds on the edit script search. Myers' algorithm costs O((N+M)·D) time and, keeping one furthest-reaching row
 * per step to recover the path, O(D²) memory; two unrelated 4 MiB configs would make both explode. Past these bounds
 * the changed middle is shown as one replaced block: still a correct diff, just not a minimal one.
 */
export const DIFF_LIMITS = { maxEdits: 2_000, maxWork: 5_000_000, maxOutputChars: 1024 * 1024 };

/** Work done by the last edit script search (compared steps); tests check it stays within DIFF_LIMITS. */
export const diffWork = { steps: 0 };

/** Myers' shortest edit script between a and b (both already trimmed of common head/tail), or undefined past the bounds. */
function editScript(a: string[], b: string[]): Op[] | undefined {
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, DIFF_LIMITS.maxEdits);
  // Row d keeps v[k] for k in [-d, d] only (index k + d).
  const trace: Int32Array[] = [];
  let v = new Int32Array(1);
  let work = 0;
  diffWork.steps = 0;
  const at = (row: Int32Array, d: number, k: number) => row[k + d];
  let found = false;
  for (let d = 0; d <= max && !found; d++) {
    const prev = v;
    trace.push(prev);
    v = new Int32Array(2 * d + 1);
    for (let k = -d; k <= d; k += 2) {
      // prev covers [-(d-1), d-1]; at d = 0 there is no previous row and x starts at 0.
      let x: number;
      if (d === 0) x = 0;
      else if (k === -d || (k !== d && at(prev, d - 1, k - 1) < at(prev, d - 1, k + 1))) x = at(prev, d - 1, k + 1);
      else x = at(prev, d - 1, k - 1) + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
        work++;
      }
      work++;
      v[k + d] = x;
      if (x >= n && y >= m) {
        found = true;
        break;
      }
    }
    if (work > DIFF_LIMITS.maxWork) break;
  }
  diffWork.steps = work;
  if (!found) return undefined;
  // trace[d] is the row computed at step d - 1 (the state before step d); walk them backwards to recover the path.
  const ops: Op[] = [];
  let x = n;
  let y = m;
  for (let d = trace.length - 1; d > 0; d--) {
    const vp = trace[d];
    const k = x - y;
    const prevK = k === -d || (k !== d && at(vp, d - 1, k - 1) < at(vp, d - 1, k + 1)) ? k + 1 : k - 1;
    const prevX = at(vp, d - 1, prevK);
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) ops.push({ kind: " ", text: a[--x] }), y--;
    if (x === prevX) ops.push({ kind: "+", text: b[--y] });
    else ops.push({ kind: "-", text: a[--x] });
  }
  while (x > 0 && y > 0) ops.push({ kind: " ", text: a[--x] }), y--;
  return ops.reverse();
}

/** The edit script of the changed middle; past the search bounds, all of it removed and then all of it added. */
function middle(a: string[], b: string[]): Op[] {
  return (
    editScript(a, b) ?? [...a.map((text) => ({ kind: "-" as const, text })), ...b.map((text) => ({ kind: "+" as const, text }))]
  );
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
    ...middle(a.slice(head, a.length - tail), b.slice(head, b.length - tail)),
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
    if (out.length > DIFF_LIMITS.maxOutputChars) {
      out = `${out.slice(0, DIFF_LIMITS.maxOutputChars)}\n... diff truncated at ${DIFF_LIMITS.maxOutputChars} characters\n`;
      break;
    }
  }
  return out;
}

/** Diff for `apply-config --dry-run`: the unified diff, or "No changes." when the texts are equal. */
export function diffConfigs(oldText: string, newText: string): string {
  return unifiedDiff(oldText, newText) || "No changes.";
}
