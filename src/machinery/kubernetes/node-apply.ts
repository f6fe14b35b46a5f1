/**
 * Making a Node object carry what this node wants (labels, annotations, taints, cordon) without taking over what
 * others set, as upstream's NodeApplyController does. Talos remembers what it owns in three annotations on the
 * Node itself (JSON lists of keys), so ownership survives restarts and is visible to `kubectl`:
 *  - a wanted key the Node does not have is added and owned; one it already has with the wanted value is owned
 *    from then on; one it has with another value is changed only when owned (someone else's is left alone);
 *  - an owned key that is no longer wanted is removed; keys never owned are never touched.
 * Taints are matched by key, as upstream. Cordoning marks the Node unschedulable with `talos.dev/cordoned`, and
 * uncordoning only undoes a cordon that annotation says Talos made.
 */
import type { NodeObject } from "./objects.js";

export const ANNOTATION_OWNED_LABELS = "talos.dev/owned-labels";
export const ANNOTATION_OWNED_ANNOTATIONS = "talos.dev/owned-annotations";
export const ANNOTATION_OWNED_TAINTS = "talos.dev/owned-taints";
export const ANNOTATION_CORDONED_KEY = "talos.dev/cordoned";
export const ANNOTATION_CORDONED_VALUE = "true";

export interface Taint {
  key: string;
  value?: string;
  effect: string;
  [k: string]: unknown;
}

export interface WantedTaint {
  key: string;
  value: string;
  effect: string;
}

export interface NodeWants {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  taints: WantedTaint[];
  cordon: boolean;
}

/** A machine.nodeTaints value: `value:Effect`, or just `Effect` (cut at the first colon, as upstream). */
export function parseNodeTaint(text: string): { value: string; effect: string } {
  const i = text.indexOf(":");
  return i < 0 ? { value: "", effect: text } : { value: text.slice(0, i), effect: text.slice(i + 1) };
}

type Skipped = (what: string, key: string) => void;

/** Labels or annotations: `current` and `owned` are changed in place. */
export function applyNodeKV(current: Record<string, string>, owned: Set<string>, wanted: Record<string, string>, skipped?: Skipped, what = "label"): void {
  for (const [key, value] of Object.entries(wanted)) {
    if (!Object.hasOwn(current, key)) {
      current[key] = value;
      owned.add(key);
    } else if (current[key] === value) {
      owned.add(key);
    } else if (owned.has(key)) {
      current[key] = value;
    } else {
      skipped?.(what, key);
    }
  }
  for (const key of [...owned]) {
    if (!Object.hasOwn(wanted, key)) {
      delete current[key];
      owned.delete(key);
    }
  }
}

/** Taints by key: returns the new list; `owned` is changed in place. */
export function applyTaints(current: Taint[], owned: Set<string>, wanted: WantedTaint[], skipped?: Skipped): Taint[] {
  const taints = current.map((t) => ({ ...t }));
  for (const want of wanted) {
    // The last taint with the key, as upstream's loop leaves it.
    const have = taints.findLast((t) => t.key === want.key);
    if (!have) {
      taints.push(want.value ? { key: want.key, value: want.value, effect: want.effect } : { key: want.key, effect: want.effect });
      owned.add(want.key);
    } else if (owned.has(want.key)) {
      if (want.value) have.value = want.value;
      else delete have.value;
      have.effect = want.effect;
    } else if ((have.value ?? "") === want.value && have.effect === want.effect) {
      owned.add(want.key);
    } else {
      skipped?.("taint", want.key);
    }
  }
  const wantedKeys = new Set(wanted.map((t) => t.key));
  return taints.filter((t) => {
    if (!owned.has(t.key) || wantedKeys.has(t.key)) return true;
    owned.delete(t.key);
    return false;
  });
}

/** Reads an ownership annotation (a JSON list of keys); throws naming the annotation when it is not one. */
export function ownedKeys(annotations: Record<string, string>, name: string): Set<string> {
  const text = annotations[name];
  if (!text) return new Set();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new Error(`annotation ${name} is not JSON: ${(e as Error).message}`);
  }
  if (parsed === null) return new Set();
  if (!Array.isArray(parsed) || parsed.some((k) => typeof k !== "string")) throw new Error(`annotation ${name} is not a list of strings`);
  return new Set(parsed as string[]);
}

function storeOwned(annotations: Record<string, string>, name: string, owned: Set<string>): void {
  if (owned.size === 0) delete annotations[name];
  else annotations[name] = JSON.stringify([...owned].sort());
}

/**
 * The Node as it should be: a copy of `node` with the wanted labels, annotations, taints and cordon applied and
 * the ownership annotations updated. `skipped` hears about wanted keys left alone because someone else set them.
 */
export function applyToNode(node: NodeObject, wants: NodeWants, skipped?: Skipped): NodeObject {
  const out = structuredClone(node);
  const meta = (out.metadata ??= {});
  const labels = (meta.labels ??= {});
  const annotations = (meta.annotations ??= {});
  const ownedLabels = ownedKeys(annotations, ANNOTATION_OWNED_LABELS);
  const ownedAnnotations = ownedKeys(annotations, ANNOTATION_OWNED_ANNOTATIONS);
  const ownedTaints = ownedKeys(annotations, ANNOTATION_OWNED_TAINTS);

  applyNodeKV(labels, ownedLabels, wants.labels, skipped, "label");
  applyNodeKV(annotations, ownedAnnotations, wants.annotations, skipped, "annotation");
  const spec = (out.spec ??= {});
  const taints = applyTaints((spec.taints as Taint[] | undefined) ?? [], ownedTaints, wants.taints, skipped);
  if (taints.length > 0) spec.taints = taints;
  else delete spec.taints;

  if (wants.cordon && !spec.unschedulable) {
    spec.unschedulable = true;
    annotations[ANNOTATION_CORDONED_KEY] = ANNOTATION_CORDONED_VALUE;
  } else if (!wants.cordon && spec.unschedulable && Object.hasOwn(annotations, ANNOTATION_CORDONED_KEY)) {
    // Only a cordon Talos made is undone; an operator's `kubectl cordon` stays.
    delete spec.unschedulable;
    delete annotations[ANNOTATION_CORDONED_KEY];
  }

  storeOwned(annotations, ANNOTATION_OWNED_LABELS, ownedLabels);
  storeOwned(annotations, ANNOTATION_OWNED_ANNOTATIONS, ownedAnnotations);
  storeOwned(annotations, ANNOTATION_OWNED_TAINTS, ownedTaints);
  return out;
}

/** Whether two Nodes differ in what applyToNode changes (labels, annotations, taints, unschedulable). */
export function nodeChanged(a: NodeObject, b: NodeObject): boolean {
  const pick = (n: NodeObject) =>
    JSON.stringify([
      sorted(n.metadata?.labels ?? {}),
      sorted(n.metadata?.annotations ?? {}),
      (n.spec?.taints as Taint[] | undefined) ?? [],
      n.spec?.unschedulable ?? false,
    ]);
  return pick(a) !== pick(b);
}

function sorted(m: Record<string, string>): [string, string][] {
  return Object.entries(m).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
}
