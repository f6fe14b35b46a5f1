/**
 * Writes a YAML node tree the way go-yaml's emitter lays it out, byte for byte, so a config re-encoded here reads
 * exactly like one re-encoded by Talos. Two layouts are needed:
 *  - GO_YAML: `yaml.Marshal` of go-yaml v4 (v3 defaults), which the config encoder uses: 4-space indentation, a
 *    sequence under a key indented, "regular" indentation (an item's content starts right after `- `, anything
 *    nested aligns to the next multiple of 4), no line folding;
 *  - GO_YAML_V2: `yaml.Marshal` of gopkg.in/yaml.v2, which writes the result of a JSON patch: 2-space indentation,
 *    a sequence under a key starts at the key's column, and long lines fold at column 80.
 *
 * Quoting is decided in two places, as in go-yaml: the representer (represent.ts, json-yaml.ts) asks for a style
 * (plain, quoted, literal) from what the value is; here the text is examined and a style it cannot take is replaced
 * (a plain `a: b` becomes single-quoted, a literal with trailing spaces becomes double-quoted ...).
 *
 * The output grows with the input only: every character is looked at a fixed number of times.
 */

export type ScalarStyle = "plain" | "single" | "double" | "literal";

export type YNode =
  | { kind: "scalar"; value: string; style: ScalarStyle }
  | { kind: "seq"; items: YNode[] }
  | { kind: "map"; entries: [YNode, YNode][] };

export interface Layout {
  indent: number;
  /** Column after which a space may become a line break (Infinity: never). */
  width: number;
  /** go-yaml v3+: an item's content starts after `- `, other nesting aligns to multiples of `indent`. */
  regular: boolean;
  /** yaml.v2's emitter details (sequences under a key not indented, tabs as special characters, ...). */
  v2: boolean;
}

export const GO_YAML: Layout = { indent: 4, width: Infinity, regular: true, v2: false };
export const GO_YAML_V2: Layout = { indent: 2, width: 80, regular: false, v2: true };

export const scalar = (value: string, style: ScalarStyle = "plain"): YNode => ({ kind: "scalar", value, style });
export const NULL: YNode = scalar("null");

interface Analysis {
  multiline: boolean;
  blockPlain: boolean;
  flowPlain: boolean;
  single: boolean;
  block: boolean;
}

const isBreak = (c: number) => c === 0x0a || c === 0x0d || c === 0x85 || c === 0x2028 || c === 0x2029;

/** YAML's printable set as go-yaml tests it (on UTF-8 bytes): no tab, no CR, no NEL, nothing above U+FFFF. */
function printable(c: number): boolean {
  return c === 0x0a || (c >= 0x20 && c <= 0x7e) || (c >= 0xa0 && c <= 0xd7ff) || (c >= 0xe000 && c <= 0xfffd && c !== 0xfeff);
}

/** Code points of a string (one entry per character, surrogate pairs joined). */
function codePoints(s: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        out.push(((c - 0xd800) << 10) + (d - 0xdc00) + 0x10000);
        i++;
        continue;
      }
    }
    out.push(c);
  }
  return out;
}

/** What styles a scalar's text allows (go-yaml's analyze_scalar). */
function analyze(cp: number[], v2: boolean): Analysis {
  const n = cp.length;
  if (n === 0) return { multiline: false, flowPlain: false, blockPlain: true, single: true, block: false };
  let blockInd = false;
  let flowInd = false;
  if (n >= 3 && ((cp[0] === 0x2d && cp[1] === 0x2d && cp[2] === 0x2d) || (cp[0] === 0x2e && cp[1] === 0x2e && cp[2] === 0x2e))) {
    blockInd = true;
    flowInd = true;
  }
  let lineBreaks = false;
  let special = false;
  let tabs = false;
  let leadingSpace = false;
  let leadingBreak = false;
  let trailingSpace = false;
  let trailingBreak = false;
  let breakSpace = false;
  let spaceBreak = false;
  let precededByWs = true;
  let prevSpace = false;
  let prevBreak = false;
  for (let i = 0; i < n; i++) {
    const c = cp[i];
    const followedByWs = i + 1 >= n || cp[i + 1] === 0x20 || cp[i + 1] === 0x09;
    if (i === 0) {
      switch (c) {
        case 0x23: case 0x2c: case 0x5b: case 0x5d: case 0x7b: case 0x7d: case 0x26: case 0x2a: case 0x21:
        case 0x7c: case 0x3e: case 0x27: case 0x22: case 0x25: case 0x40: case 0x60: // # , [ ] { } & * ! | > ' " % @ `
          flowInd = true;
          blockInd = true;
          break;
        case 0x3f: case 0x3a: // ? :
          flowInd = true;
          if (followedByWs) blockInd = true;
          break;
        case 0x2d: // -
          if (followedByWs) {
            flowInd = true;
            blockInd = true;
          }
          break;
      }
    } else {
      switch (c) {
        case 0x2c: case 0x3f: case 0x5b: case 0x5d: case 0x7b: case 0x7d:
          flowInd = true;
          break;
        case 0x3a:
          flowInd = true;
          if (followedByWs) blockInd = true;
          break;
        case 0x23:
          if (precededByWs) {
            flowInd = true;
            blockInd = true;
          }
          break;
      }
    }
    if (c === 0x09 && !v2) tabs = true;
    else if (!printable(c)) special = true;
    if (c === 0x20) {
      if (i === 0) leadingSpace = true;
      if (i === n - 1) trailingSpace = true;
      if (prevBreak) breakSpace = true;
      prevSpace = true;
      prevBreak = false;
    } else if (isBreak(c)) {
      lineBreaks = true;
      if (i === 0) leadingBreak = true;
      if (i === n - 1) trailingBreak = true;
      if (prevSpace) spaceBreak = true;
      prevSpace = false;
      prevBreak = true;
    } else {
      prevSpace = false;
      prevBreak = false;
    }
    precededByWs = c === 0x20 || c === 0x09 || isBreak(c) || c === 0;
  }
  const a: Analysis = { multiline: lineBreaks, flowPlain: true, blockPlain: true, single: true, block: true };
  if (leadingSpace || leadingBreak || trailingSpace || trailingBreak) a.flowPlain = a.blockPlain = false;
  if (trailingSpace) a.block = false;
  if (breakSpace) a.flowPlain = a.blockPlain = a.single = false;
  if (spaceBreak || tabs || special) a.flowPlain = a.blockPlain = a.single = false;
  if (spaceBreak || special) a.block = false;
  if (lineBreaks) a.flowPlain = a.blockPlain = false;
  if (flowInd) a.flowPlain = false;
  if (blockInd) a.blockPlain = false;
  return a;
}

interface Context {
  root: boolean;
  /** The node is a mapping value (or key); a v2 sequence here is written without extra indentation. */
  mapping: boolean;
  simpleKey: boolean;
  /** The node is an item of a block sequence (its indentation starts after `- `). */
  seqItem: boolean;
}

const ESCAPES: Record<number, string> = {
  0x00: "0", 0x07: "a", 0x08: "b", 0x09: "t", 0x0a: "n", 0x0b: "v", 0x0c: "f", 0x0d: "r", 0x1b: "e",
  0x22: '"', 0x5c: "\\", 0x85: "N", 0xa0: "_", 0x2028: "L", 0x2029: "P",
};

class Emitter {
  private out = "";
  private column = 0;
  private whitespace = true;
  private indention = true;
  private indent = -1;
  private readonly indents: number[] = [];
  private flowLevel = 0;

  constructor(private readonly layout: Layout) {}

  document(root: YNode): string {
    this.node(root, { root: true, mapping: false, simpleKey: false, seqItem: false });
    this.writeIndent();
    return this.out;
  }

  private put(s: string): void {
    this.out += s;
    this.column += s.length;
  }

  private putChar(c: number): void {
    this.out += String.fromCodePoint(c);
    this.column++;
  }

  private putBreak(): void {
    this.out += "\n";
    this.column = 0;
    if (!this.layout.v2) this.indention = true;
  }

  /** A line break character taken from the text: `\n` is written as is, others (LS, PS, NEL) too. */
  private writeBreak(c: number): void {
    if (c === 0x0a) this.putBreak();
    else {
      this.out += String.fromCodePoint(c);
      this.column = 0;
      if (!this.layout.v2) this.indention = true;
    }
  }

  private writeIndent(): void {
    const indent = Math.max(this.indent, 0);
    if (!this.indention || this.column > indent || (this.column === indent && !this.whitespace)) this.putBreak();
    while (this.column < indent) this.put(" ");
    this.whitespace = true;
    if (this.layout.v2) this.indention = true;
  }

  private indicator(s: string, needWhitespace: boolean, isWhitespace: boolean, isIndention: boolean): void {
    if (needWhitespace && !this.whitespace) this.put(" ");
    this.put(s);
    this.whitespace = isWhitespace;
    this.indention = this.indention && isIndention;
  }

  private increaseIndent(flow: boolean, indentless: boolean, seqItem: boolean): void {
    this.indents.push(this.indent);
    const step = this.layout.indent;
    if (this.indent < 0) this.indent = flow ? step : 0;
    else if (!indentless) {
      if (!this.layout.regular) this.indent += step;
      else if (seqItem) this.indent += 2;
      else this.indent = step * Math.floor((this.indent + step) / step);
    }
  }

  private popIndent(): void {
    this.indent = this.indents.pop() ?? -1;
  }

  private node(n: YNode, ctx: Context): void {
    if (n.kind === "scalar") this.scalar(n, ctx);
    else if (n.kind === "seq") {
      if (n.items.length === 0 || this.flowLevel > 0) this.flowSequence(n, ctx);
      else this.blockSequence(n, ctx);
    } else if (n.entries.length === 0 || this.flowLevel > 0) this.flowMapping(n, ctx);
    else this.blockMapping(n, ctx);
  }

  // Only empty collections are written in flow style (no encoded field asks for flow style).
  private flowSequence(n: Extract<YNode, { kind: "seq" }>, ctx: Context): void {
    this.indicator("[", true, true, false);
    this.increaseIndent(true, false, ctx.seqItem);
    this.flowLevel++;
    n.items.forEach((item, i) => {
      if (i > 0) this.indicator(",", false, false, false);
      if (this.column > this.layout.width) this.writeIndent();
      this.node(item, { root: false, mapping: false, simpleKey: false, seqItem: false });
    });
    this.flowLevel--;
    this.popIndent();
    this.indicator("]", false, false, false);
  }

  private flowMapping(n: Extract<YNode, { kind: "map" }>, ctx: Context): void {
    this.indicator("{", true, true, false);
    this.increaseIndent(true, false, ctx.seqItem);
    this.flowLevel++;
    n.entries.forEach(([k, v], i) => {
      if (i > 0) this.indicator(",", false, false, false);
      if (this.column > this.layout.width) this.writeIndent();
      this.node(k, { root: false, mapping: true, simpleKey: true, seqItem: false });
      this.indicator(":", false, false, false);
      this.node(v, { root: false, mapping: true, simpleKey: false, seqItem: false });
    });
    this.flowLevel--;
    this.popIndent();
    this.indicator("}", false, false, false);
  }

  private blockSequence(n: Extract<YNode, { kind: "seq" }>, ctx: Context): void {
    const indentless = this.layout.v2 && ctx.mapping && !this.indention;
    this.increaseIndent(false, indentless, ctx.seqItem);
    for (const item of n.items) {
      this.writeIndent();
      this.indicator("-", true, false, true);
      this.node(item, { root: false, mapping: false, simpleKey: false, seqItem: true });
    }
    this.popIndent();
  }

  private blockMapping(n: Extract<YNode, { kind: "map" }>, ctx: Context): void {
    this.increaseIndent(false, false, ctx.seqItem);
    for (const [k, v] of n.entries) {
      this.writeIndent();
      if (this.simpleKey(k)) {
        this.node(k, { root: false, mapping: true, simpleKey: true, seqItem: false });
        this.indicator(":", false, false, false);
      } else {
        this.indicator("?", true, false, true);
        this.node(k, { root: false, mapping: true, simpleKey: false, seqItem: false });
        this.writeIndent();
        this.indicator(":", true, false, true);
      }
      this.node(v, { root: false, mapping: true, simpleKey: false, seqItem: false });
    }
    this.popIndent();
  }

  /** A key goes on one line before `:` when it is a one-line scalar of at most 128 bytes (or an empty collection). */
  private simpleKey(k: YNode): boolean {
    if (k.kind === "seq") return k.items.length === 0;
    if (k.kind === "map") return k.entries.length === 0;
    for (let i = 0; i < k.value.length; i++) if (isBreak(k.value.charCodeAt(i))) return false;
    return Buffer.byteLength(k.value) <= 128;
  }

  private scalar(n: Extract<YNode, { kind: "scalar" }>, ctx: Context): void {
    const cp = codePoints(n.value);
    const a = analyze(cp, this.layout.v2);
    let style = n.style;
    if (ctx.simpleKey && a.multiline) style = "double";
    if (style === "plain") {
      if ((this.flowLevel > 0 && !a.flowPlain) || (this.flowLevel === 0 && !a.blockPlain)) style = "single";
      if (cp.length === 0 && (this.flowLevel > 0 || ctx.simpleKey)) style = "single";
    }
    if (style === "single" && !a.single) style = "double";
    if (style === "literal" && (!a.block || this.flowLevel > 0 || ctx.simpleKey)) style = "double";

    this.increaseIndent(true, false, ctx.seqItem);
    const breaks = !ctx.simpleKey;
    if (style === "plain") this.plain(cp, breaks);
    else if (style === "single") this.singleQuoted(cp, breaks);
    else if (style === "double") this.doubleQuoted(cp, breaks);
    else this.literal(cp);
    this.popIndent();
  }

  private plain(cp: number[], allowBreaks: boolean): void {
    if ((cp.length > 0 || this.layout.v2) && !this.whitespace) this.put(" ");
    let spaces = false;
    let breaks = false;
    for (let i = 0; i < cp.length; i++) {
      const c = cp[i];
      if (c === 0x20) {
        if (allowBreaks && !spaces && this.column > this.layout.width && cp[i + 1] !== 0x20) this.writeIndent();
        else this.put(" ");
        spaces = true;
      } else if (isBreak(c)) {
        if (!breaks && c === 0x0a) this.putBreak();
        this.writeBreak(c);
        if (this.layout.v2) this.indention = true;
        breaks = true;
      } else {
        if (breaks) this.writeIndent();
        this.putChar(c);
        this.indention = false;
        spaces = false;
        breaks = false;
      }
    }
    if (cp.length > 0 || this.layout.v2) this.whitespace = false;
    this.indention = false;
  }

  private singleQuoted(cp: number[], allowBreaks: boolean): void {
    this.indicator("'", true, false, false);
    let spaces = false;
    let breaks = false;
    for (let i = 0; i < cp.length; i++) {
      const c = cp[i];
      if (c === 0x20) {
        if (allowBreaks && !spaces && this.column > this.layout.width && i > 0 && i < cp.length - 1 && cp[i + 1] !== 0x20) {
          this.writeIndent();
        } else this.put(" ");
        spaces = true;
      } else if (isBreak(c)) {
        if (!breaks && c === 0x0a) this.putBreak();
        this.writeBreak(c);
        if (this.layout.v2) this.indention = true;
        breaks = true;
      } else {
        if (breaks) this.writeIndent();
        if (c === 0x27) this.put("'");
        this.putChar(c);
        this.indention = false;
        spaces = false;
        breaks = false;
      }
    }
    this.indicator("'", false, false, false);
    this.whitespace = false;
    this.indention = false;
  }

  private doubleQuoted(cp: number[], allowBreaks: boolean): void {
    this.indicator('"', true, false, false);
    // go-yaml tests for a byte order mark at the start of the whole value, not at each character, so a value that
    // starts with one has every character escaped.
    const bom = cp[0] === 0xfeff;
    let spaces = false;
    for (let i = 0; i < cp.length; i++) {
      const c = cp[i];
      if (!printable(c) || bom || isBreak(c) || c === 0x22 || c === 0x5c) {
        const e = ESCAPES[c];
        if (e !== undefined) this.put("\\" + e);
        else if (c <= 0xff) this.put("\\x" + c.toString(16).toUpperCase().padStart(2, "0"));
        else if (c <= 0xffff) this.put("\\u" + c.toString(16).toUpperCase().padStart(4, "0"));
        else this.put("\\U" + c.toString(16).toUpperCase().padStart(8, "0"));
        spaces = false;
      } else if (c === 0x20) {
        if (allowBreaks && !spaces && this.column > this.layout.width && i > 0 && i < cp.length - 1) {
          this.writeIndent();
          if (cp[i + 1] === 0x20) this.put("\\");
        } else this.put(" ");
        spaces = true;
      } else {
        this.putChar(c);
        spaces = false;
      }
    }
    this.indicator('"', false, false, false);
    this.whitespace = false;
    this.indention = false;
  }

  private literal(cp: number[]): void {
    this.indicator("|", true, false, false);
    // Indentation hint when the text starts with a space (v2: or a line break), so it is not taken as indentation.
    if (cp[0] === 0x20 || (this.layout.v2 && cp.length > 0 && isBreak(cp[0]))) {
      this.indicator(String(this.layout.indent), false, false, false);
    }
    // Chomping: `-` without a final line break, `+` with more than one (or when the text is a lone break).
    const n = cp.length;
    if (n === 0 || !isBreak(cp[n - 1])) this.indicator("-", false, false, false);
    else if (n === 1 || isBreak(cp[n - 2])) this.indicator("+", false, false, false);
    this.putBreak();
    if (this.layout.v2) this.indention = true;
    this.whitespace = true;
    let breaks = true;
    for (const c of cp) {
      if (isBreak(c)) {
        this.writeBreak(c);
        if (this.layout.v2) this.indention = true;
        breaks = true;
      } else {
        if (breaks) this.writeIndent();
        this.putChar(c);
        this.indention = false;
        breaks = false;
      }
    }
  }
}

/** One YAML document (no `---`), ending with a line break. */
export function emitDocument(root: YNode, layout: Layout = GO_YAML): string {
  return new Emitter(layout).document(root);
}
