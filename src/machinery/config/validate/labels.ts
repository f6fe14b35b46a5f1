/**
 * Kubernetes label, annotation and taint syntax (the checks upstream's labels package applies to
 * machine.nodeLabels, nodeAnnotations and nodeTaints).
 */
const dnsLabel = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const dnsSubdomain = new RegExp(`^${dnsLabel}(\\.${dnsLabel})*$`);
const qualifiedName = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

/** Checks a `[prefix/]name` key; returns a problem or undefined. */
export function checkQualifiedName(key: string): string | undefined {
  const parts = key.split("/");
  if (parts.length > 2) return `invalid format: too many slashes: ${JSON.stringify(key)}`;
  const name = parts[parts.length - 1];
  if (parts.length === 2) {
    const prefix = parts[0];
    if (prefix === "") return `prefix cannot be empty: ${JSON.stringify(key)}`;
    if (prefix.length > 253 || !dnsSubdomain.test(prefix)) return `prefix ${JSON.stringify(prefix)} is invalid`;
  }
  if (name === "") return `name cannot be empty: ${JSON.stringify(key)}`;
  if (name.length > 63) return `name is too long: ${JSON.stringify(key)} (limit is 63)`;
  if (!qualifiedName.test(name)) return `name ${JSON.stringify(name)} is invalid`;
  return undefined;
}

export function checkLabelValue(value: string): string | undefined {
  if (value.length > 63) return `label value length exceeds limit of 63: ${JSON.stringify(value)}`;
  if (value !== "" && !qualifiedName.test(value)) return `label value ${JSON.stringify(value)} is invalid`;
  return undefined;
}

const effects = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/** A taint value is `effect` or `value:effect`. */
export function checkTaint(value: string): string | undefined {
  const idx = value.indexOf(":");
  const effect = idx < 0 ? value : value.slice(idx + 1);
  if (!effects.includes(effect)) return `invalid taint effect: ${JSON.stringify(effect)}`;
  return idx < 0 ? undefined : checkLabelValue(value.slice(0, idx));
}

const reservedAnnotations = new Set([
  "talos.dev/owned-annotations",
  "talos.dev/owned-labels",
  "talos.dev/owned-taints",
]);

export function checkAnnotationKey(key: string): string | undefined {
  if (reservedAnnotations.has(key)) return `annotation ${JSON.stringify(key)} is reserved`;
  return checkQualifiedName(key);
}
