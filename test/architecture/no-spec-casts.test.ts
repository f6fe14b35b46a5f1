/**
 * Guard for typed resource reads (issue 9): a resource type carries its spec type, so code reads specs through
 * read/readSpec/readAll/watch (src/machinery/resources/read.ts) and never casts `.spec as X`. A cast hides a
 * wrong type or namespace from the compiler; this test finds them in the syntax tree (comments and strings
 * do not count) and fails on any cast outside the explicit lists below.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");

/** The typed helpers themselves: the one place where a stored resource becomes a typed one. */
const HELPERS = new Set(["src/machinery/resources/read.ts", "src/state/runtime/context.ts"]);

/**
 * Files allowed casts while their conversion is pending, each with the number it has: none are left. An entry may
 * only go down (a stale one fails), so one added here must say why and come out again.
 */
const PENDING: Record<string, number> = {};

export interface SpecCast {
  line: number;
  text: string;
}

function unwrap(e: ts.Expression): ts.Expression {
  while (ts.isParenthesizedExpression(e) || ts.isNonNullExpression(e)) e = e.expression;
  return e;
}

function isSpecAccess(e: ts.Expression): boolean {
  const x = unwrap(e);
  if (ts.isPropertyAccessExpression(x)) return x.name.text === "spec";
  if (ts.isElementAccessExpression(x)) return ts.isStringLiteralLike(x.argumentExpression) && x.argumentExpression.text === "spec";
  return false;
}

/** `Resource<...>`: a whole resource asserted to a typed one, the same cast one level up. */
function isTypedResource(t: ts.TypeNode): boolean {
  if (ts.isUnionTypeNode(t)) return t.types.some(isTypedResource);
  if (ts.isArrayTypeNode(t)) return isTypedResource(t.elementType);
  return ts.isTypeReferenceNode(t) && ts.isIdentifier(t.typeName) && t.typeName.text === "Resource" && (t.typeArguments?.length ?? 0) > 0;
}

/** Every `.spec as X` / `<X>x.spec` / `as Resource<X>` assertion in one source text. */
export function findSpecCasts(fileName: string, text: string): SpecCast[] {
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found: SpecCast[] = [];
  const visit = (n: ts.Node): void => {
    if ((ts.isAsExpression(n) || ts.isTypeAssertionExpression(n)) && (isSpecAccess(n.expression) || isTypedResource(n.type))) {
      const line = sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1;
      found.push({ line, text: n.getText(sf).replace(/\s+/g, " ").slice(0, 120) });
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return found;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (p !== path.join(ROOT, "src/machinery/api/gen")) out.push(...sourceFiles(p)); // generated protos
    } else if (e.isFile() && e.name.endsWith(".ts")) out.push(p);
  }
  return out;
}

/** A file that never says `spec` or `Resource<` cannot hold such a cast: only the others are parsed. */
const MAY_CAST = /\bspec\b|Resource\s*</;

let scanned: Map<string, SpecCast[]> | undefined;
function castsInSrc(): Map<string, SpecCast[]> {
  if (scanned) return scanned;
  scanned = new Map();
  for (const abs of sourceFiles(path.join(ROOT, "src"))) {
    const text = readFileSync(abs, "utf8");
    if (!MAY_CAST.test(text)) continue;
    const rel = path.relative(ROOT, abs).split(path.sep).join("/");
    const casts = findSpecCasts(rel, text);
    if (casts.length > 0) scanned.set(rel, casts);
  }
  return scanned;
}

describe("no .spec casts in src/", () => {
  it("finds casts in the syntax tree, not in comments or strings", () => {
    const src = [
      "// a comment about r.spec as X does not count",
      'const s = "r.spec as X";',
      "const a = r.spec as LinkStatusSpec;",
      "const b = ctx.get(ptr)?.spec as NodeAddressSpec | undefined;",
      "const c = ((r.spec) as { nodeId?: string }).nodeId;",
      "const d = r.spec! as unknown as Foo;",
      "const e = <Foo>r.spec;",
      'const f = r["spec"] as Foo;',
      "const g = ctx.get(ptr) as Resource<Foo> | undefined;",
      "const h = readSpec(ctx, LinkStatusType, id);",
      "const i = r.spec;",
      "const j = value as Foo;",
    ].join("\n");
    expect(findSpecCasts("sample.ts", src).map((c) => c.line)).toEqual([3, 4, 5, 6, 7, 8, 9]);
  });

  it("has no cast outside the typed helpers and the pending files", () => {
    const offending: string[] = [];
    for (const [file, casts] of castsInSrc()) {
      if (HELPERS.has(file)) continue;
      const allowed = PENDING[file] ?? 0;
      if (casts.length > allowed) {
        const where = casts.map((c) => `  ${file}:${c.line}: ${c.text}`).join("\n");
        offending.push(`${file} has ${casts.length} cast(s), ${allowed} allowed; read it with read/readSpec/readAll/watch instead:\n${where}`);
      }
    }
    expect(offending, offending.join("\n")).toEqual([]);
  });

  it("lists no pending file that has none left (the list only shrinks)", () => {
    const casts = castsInSrc();
    const stale = Object.keys(PENDING).filter((f) => !casts.has(f));
    expect(stale, `remove from PENDING in test/architecture/no-spec-casts.test.ts: ${stale.join(", ")}`).toEqual([]);
  });
});
