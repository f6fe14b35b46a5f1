/**
 * Version ordering as systemd-boot applies it to the `version` field of boot entries (the UAPI "Version Format
 * Specification"). Our sd-boot model must order entries exactly like the firmware-side loader does, or the
 * crash-safety tests would prove the wrong thing.
 *
 * Returns <0 when a is older than b, 0 when equivalent, >0 when a is newer.
 */
const isDigit = (c: string) => c >= "0" && c <= "9";
const isAlpha = (c: string) => (c >= "a" && c <= "z") || (c >= "A" && c <= "Z");
const isSignificant = (c: string) => isDigit(c) || isAlpha(c) || c === "~" || c === "-" || c === "^" || c === ".";
const sign = (n: number) => (n < 0 ? -1 : n > 0 ? 1 : 0);
const cmpStr = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export function compareVersions(a: string | undefined, b: string | undefined): number {
  // a missing or empty version is older than any present one
  if (!a || !b) {
    if (a === b) return 0;
    if (a === undefined) return -1;
    if (b === undefined) return 1;
    return cmpStr(a, b);
  }
  let i = 0;
  let j = 0;
  const at = (s: string, k: number) => (k < s.length ? s[k] : "");
  for (;;) {
    while (i < a.length && !isSignificant(a[i])) i++;
    while (j < b.length && !isSignificant(b[j])) j++;

    // "~" marks a pre-release: older than anything, even the end of the string
    if (at(a, i) === "~" || at(b, j) === "~") {
      const r = sign(Number(at(a, i) !== "~") - Number(at(b, j) !== "~"));
      if (r !== 0) return r;
      i++;
      j++;
    }
    if (i >= a.length || j >= b.length) return cmpStr(a.slice(i), b.slice(j));

    for (const sep of ["-", "^", "."]) {
      if (at(a, i) === sep || at(b, j) === sep) {
        const r = sign(Number(at(a, i) !== sep) - Number(at(b, j) !== sep));
        if (r !== 0) return r;
        i++;
        j++;
      }
    }

    let ie = i;
    let je = j;
    if (isDigit(at(a, i)) || isDigit(at(b, j))) {
      while (isDigit(at(a, ie))) ie++;
      while (isDigit(at(b, je))) je++;
      // a numeric segment is newer than a missing one
      let r = sign(Number(ie !== i) - Number(je !== j));
      if (r !== 0) return r;
      while (at(a, i) === "0") i++;
      while (at(b, j) === "0") j++;
      r = sign(ie - i - (je - j));
      if (r !== 0) return r;
      r = cmpStr(a.slice(i, ie), b.slice(j, je));
      if (r !== 0) return r;
    } else {
      while (isAlpha(at(a, ie))) ie++;
      while (isAlpha(at(b, je))) je++;
      const n = Math.min(ie - i, je - j);
      let r = cmpStr(a.slice(i, i + n), b.slice(j, j + n));
      if (r !== 0) return r;
      r = sign(ie - i - (je - j));
      if (r !== 0) return r;
    }
    i = ie;
    j = je;
  }
}
