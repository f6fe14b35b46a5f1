/**
 * Turns zod issues into ConfigIssues whose messages name the YAML path and the offending value, e.g.
 * `machine.network.interfaces[0].mtu: expected integer, got string "abc"`. zod's own texts are not used: they
 * do not show the value and use JS type names.
 */
import type * as z from "zod";
import type { ConfigIssue } from "./errors.js";
import { clip } from "./limits.js";
import { describeValue, formatPath, valueAt, type PathSegment } from "./path.js";

export type Locator = (path: readonly PathSegment[]) => { line: number; column: number } | undefined;

const typeNames: Record<string, string> = {
  string: "string",
  number: "number",
  int: "integer",
  boolean: "boolean",
  object: "map",
  record: "map",
  map: "map",
  array: "list",
};

function expectedName(issue: z.core.$ZodIssue): string {
  if (issue.code === "invalid_type") return typeNames[issue.expected] ?? issue.expected;
  if (issue.code === "invalid_union") {
    const names = issue.errors.map((branch) => {
      const first = branch[0];
      return first ? expectedName(first) : "value";
    });
    return [...new Set(names)].join(" or ");
  }
  return "value";
}

function describeIssue(issue: z.core.$ZodIssue, value: unknown): string {
  switch (issue.code) {
    case "invalid_type":
      if (value === undefined) return "required field is missing";
      return `expected ${expectedName(issue)}, got ${describeValue(value)}`;
    case "invalid_union":
      return `expected ${expectedName(issue)}, got ${describeValue(value)}`;
    case "too_small":
      if (issue.origin === "number") return `expected a non-negative integer, got ${describeValue(value)}`;
      return `${issue.message}, got ${describeValue(value)}`;
    default:
      return `${issue.message} ${value !== null && typeof value === "object" ? describeValue(value) : clip(JSON.stringify(value) ?? String(value), 100)}`;
  }
}

/**
 * Converts the issues of one failed parse of `input`. `base` prefixes every path (used for documents nested in a
 * larger structure); `locate` maps a path to its source position so issues can be sorted in reading order.
 */
export function toConfigIssues(
  issues: readonly z.core.$ZodIssue[],
  input: unknown,
  locate?: Locator,
  base: readonly PathSegment[] = [],
): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  for (const issue of issues) {
    const rel = issue.path as PathSegment[];
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) {
        const path = [...base, ...rel, key];
        out.push(withPos({ path: formatPath(path), message: `${formatPath(path)}: unknown keys found during decoding` }, locate, path));
      }
      continue;
    }
    const path = [...base, ...rel];
    const text = describeIssue(issue, valueAt(input, rel));
    const p = formatPath(path);
    out.push(withPos({ path: p, message: p === "" ? text : `${p}: ${text}` }, locate, path));
  }
  return out.sort((a, b) => (a.line ?? Infinity) - (b.line ?? Infinity) || (a.column ?? 0) - (b.column ?? 0));
}

function withPos(issue: ConfigIssue, locate: Locator | undefined, path: PathSegment[]): ConfigIssue {
  const pos = locate?.(path);
  if (pos) {
    issue.line = pos.line;
    issue.column = pos.column;
  }
  return issue;
}
