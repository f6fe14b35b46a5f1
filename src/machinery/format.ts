/** Texts formatted the way upstream's Go code prints them, where talosctl users see them verbatim. */

/** A string slice as Go's `%q` prints it: `["a" "b"]`. */
export function quoteList(l: string[]): string {
  return `[${l.map((s) => JSON.stringify(s)).join(" ")}]`;
}
