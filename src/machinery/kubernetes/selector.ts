/**
 * Kubernetes label and field selectors: the text form the API takes (`k8s-app=kube-proxy`,
 * `k8s-app in (kube-apiserver,kube-scheduler)`, `metadata.name=node-1`) and the matching the API server does,
 * so an in-memory API answers a list exactly like the real one.
 */

export type Requirement =
  | { key: string; op: "=" | "!="; value: string }
  | { key: string; op: "in" | "notin"; values: string[] }
  | { key: string; op: "exists" | "!exists" };

/** Splits on commas outside parentheses. */
function terms(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = "";
  for (const ch of text) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      out.push(cur);
      cur = "";
    } else cur += ch;
  }
  out.push(cur);
  return out.map((t) => t.trim()).filter((t) => t !== "");
}

export function parseLabelSelector(text: string): Requirement[] {
  return terms(text).map((t) => {
    const set = /^([^\s!=(),]+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(t);
    if (set) return { key: set[1], op: set[2] as "in" | "notin", values: set[3].split(",").map((v) => v.trim()).filter(Boolean) };
    const eq = /^([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)$/.exec(t);
    if (eq) return { key: eq[1], op: eq[2] === "!=" ? "!=" : "=", value: eq[3] };
    const ex = /^(!?)\s*([^\s!=(),]+)$/.exec(t);
    if (ex) return { key: ex[2], op: ex[1] ? "!exists" : "exists" };
    throw new Error(`unable to parse requirement: ${JSON.stringify(t)}`);
  });
}

export function matchesLabels(selector: string | Requirement[] | undefined, labels: Record<string, string> | undefined): boolean {
  if (selector === undefined) return true;
  const reqs = typeof selector === "string" ? parseLabelSelector(selector) : selector;
  const l = labels ?? {};
  return reqs.every((r) => {
    const has = Object.hasOwn(l, r.key);
    switch (r.op) {
      case "=":
        return has && l[r.key] === r.value;
      case "!=":
        return !has || l[r.key] !== r.value;
      case "in":
        return has && r.values.includes(l[r.key]);
      case "notin":
        return !has || !r.values.includes(l[r.key]);
      case "exists":
        return has;
      case "!exists":
        return !has;
    }
  });
}

/** `metadata.name=x,metadata.namespace!=y` against an object: only the metadata fields every kind supports. */
export function matchesFields(selector: string | undefined, obj: { metadata?: { name?: string; namespace?: string } }): boolean {
  if (!selector) return true;
  return terms(selector).every((t) => {
    const m = /^([^\s!=]+)\s*(==|=|!=)\s*(.*)$/.exec(t);
    if (!m) throw new Error(`invalid field selector: ${JSON.stringify(t)}`);
    const [, field, op, value] = m;
    const actual = field === "metadata.name" ? obj.metadata?.name : field === "metadata.namespace" ? obj.metadata?.namespace : undefined;
    if (actual === undefined && field !== "metadata.name" && field !== "metadata.namespace") {
      throw new Error(`field label not supported: ${field}`);
    }
    return op === "!=" ? (actual ?? "") !== value : (actual ?? "") === value;
  });
}
