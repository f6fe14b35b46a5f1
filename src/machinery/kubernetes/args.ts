/**
 * Command-line flag sets with the merge rules Talos applies to user `extraArgs`: some flags may not be
 * overridden (denied), some accumulate comma-separated values (additive), the rest are replaced.
 * Rendered as sorted `--key=value` flags, one per value, like upstream's argsbuilder.
 */
export type Args = Map<string, string[]>;
export type MergePolicy = "overwrite" | "additive" | "denied";

/** Normalizes config `extraArgs` (a string or a list per flag) to value lists. */
export function extraArgs(raw: Record<string, string | string[]> | undefined): Args {
  const out: Args = new Map();
  for (const [k, v] of Object.entries(raw ?? {})) out.set(k, Array.isArray(v) ? [...v] : [v]);
  return out;
}

export function args(init: Record<string, string | string[]>): Args {
  return extraArgs(init);
}

/** Merges `extra` into `base` in place; a denied flag throws (the reconcile fails and says which flag). */
export function mergeArgs(base: Args, extra: Args, policies: Record<string, MergePolicy> = {}): Args {
  for (const [key, val] of extra) {
    const policy = policies[key] ?? "overwrite";
    if (policy === "denied") throw new Error(`extra arg ${JSON.stringify(key)} is not allowed`);
    if (policy === "overwrite") {
      base.set(key, [...val]);
      continue;
    }
    const values: string[] = [];
    for (const v of [...(base.get(key) ?? []), ...val].join(",").split(",")) {
      const t = v.trim();
      if (t !== "" && !values.includes(t)) values.push(t);
    }
    base.set(key, [values.join(",")]);
  }
  return base;
}

export function renderArgs(a: Args): string[] {
  return [...a.keys()].sort().flatMap((k) => a.get(k)!.map((v) => `--${k}=${v}`));
}
