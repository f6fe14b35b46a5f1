/**
 * Seeded randomness and text mutations for fuzz tests. The seed comes from FUZZ_SEED when set (to replay a failure)
 * and is printed by every failure message that uses `tag`.
 */

export interface Rng {
  seed: number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
  pick<T>(list: readonly T[]): T;
  chance(p: number): boolean;
}

/** mulberry32: small, fast, good enough to spread mutations; the same seed gives the same run. */
export function rng(seed: number = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31)): Rng {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    seed,
    int: (n) => Math.floor(next() * n),
    pick: (list) => list[Math.floor(next() * list.length)],
    chance: (p) => next() < p,
  };
}

/** Characters a one-character mutation puts in: YAML punctuation, digits, letters, whitespace, odd code points. */
const ALPHABET = [..."abcXYZ019-_.:,#&*!|>'\"[]{}% \t\n", "é", "\u0000", "\u0001", "\uFEFF", "\u2028"];

export interface Mutation {
  text: string;
  what: string;
}

/** One random edit of `text`: a character replaced, inserted or deleted, or a line deleted or duplicated. */
export function mutate(text: string, r: Rng): Mutation {
  const lines = text.split("\n");
  switch (r.int(5)) {
    case 0: {
      const p = r.int(text.length);
      const c = r.pick(ALPHABET);
      return { text: text.slice(0, p) + c + text.slice(p + 1), what: `replace offset ${p} with ${JSON.stringify(c)}` };
    }
    case 1: {
      const p = r.int(text.length + 1);
      const c = r.pick(ALPHABET);
      return { text: text.slice(0, p) + c + text.slice(p), what: `insert ${JSON.stringify(c)} at offset ${p}` };
    }
    case 2: {
      const p = r.int(text.length);
      return { text: text.slice(0, p) + text.slice(p + 1), what: `delete offset ${p}` };
    }
    case 3: {
      const i = r.int(lines.length);
      return { text: [...lines.slice(0, i), ...lines.slice(i + 1)].join("\n"), what: `delete line ${i + 1}` };
    }
    default: {
      const i = r.int(lines.length);
      return { text: [...lines.slice(0, i + 1), ...lines.slice(i)].join("\n"), what: `duplicate line ${i + 1}` };
    }
  }
}
