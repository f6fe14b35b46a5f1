/**
 * The Node ownership rules (upstream node_apply.go and its tests' cases): what is added, owned, changed, removed,
 * and what is never touched.
 */
import { describe, expect, it } from "vitest";
import {
  applyNodeKV,
  applyTaints,
  applyToNode,
  nodeChanged,
  ownedKeys,
  parseNodeTaint,
  type NodeWants,
} from "../../../src/machinery/kubernetes/node-apply.js";
import type { NodeObject } from "../../../src/machinery/kubernetes/objects.js";

const none: NodeWants = { labels: {}, annotations: {}, taints: [], cordon: false };

describe("applyNodeKV", () => {
  const run = (current: Record<string, string>, owned: string[], wanted: Record<string, string>) => {
    const cur = { ...current };
    const own = new Set(owned);
    const skipped: string[] = [];
    applyNodeKV(cur, own, wanted, (_w, k) => skipped.push(k));
    return { cur, owned: [...own].sort(), skipped };
  };

  it("changes nothing when nothing is wanted and nothing owned", () => {
    expect(run({ a: "1" }, [], {})).toEqual({ cur: { a: "1" }, owned: [], skipped: [] });
  });

  it("adds missing keys and owns them; owns a key already there with the wanted value", () => {
    expect(run({ other: "x", same: "v" }, [], { fresh: "1", same: "v" })).toEqual({ cur: { other: "x", same: "v", fresh: "1" }, owned: ["fresh", "same"], skipped: [] });
  });

  it("updates owned keys and removes owned keys no longer wanted", () => {
    expect(run({ a: "old", b: "gone", c: "keep" }, ["a", "b"], { a: "new" })).toEqual({ cur: { a: "new", c: "keep" }, owned: ["a"], skipped: [] });
  });

  it("leaves a key someone else set to another value alone and does not own it", () => {
    expect(run({ a: "theirs" }, [], { a: "ours" })).toEqual({ cur: { a: "theirs" }, owned: [], skipped: ["a"] });
  });
});

describe("applyTaints", () => {
  const cp = { key: "node-role.kubernetes.io/control-plane", value: "", effect: "NoSchedule" };

  it("adds a missing taint (no value field when the value is empty) and owns it", () => {
    const owned = new Set<string>();
    expect(applyTaints([{ key: "x", effect: "NoExecute" }], owned, [cp])).toEqual([{ key: "x", effect: "NoExecute" }, { key: cp.key, effect: "NoSchedule" }]);
    expect([...owned]).toEqual([cp.key]);
  });

  it("takes over the taint the kubelet registered with (same value and effect)", () => {
    const owned = new Set<string>();
    expect(applyTaints([{ key: cp.key, effect: "NoSchedule" }], owned, [cp])).toEqual([{ key: cp.key, effect: "NoSchedule" }]);
    expect(owned.has(cp.key)).toBe(true);
  });

  it("updates an owned taint, keeps someone else's different one, removes an owned one no longer wanted", () => {
    const owned = new Set(["mine", "old"]);
    const skipped: string[] = [];
    const out = applyTaints(
      [
        { key: "mine", value: "a", effect: "NoSchedule" },
        { key: "theirs", value: "t", effect: "NoSchedule" },
        { key: "old", effect: "NoExecute" },
      ],
      owned,
      [
        { key: "mine", value: "b", effect: "PreferNoSchedule" },
        { key: "theirs", value: "x", effect: "NoSchedule" },
      ],
      (_w, k) => skipped.push(k),
    );
    expect(out).toEqual([
      { key: "mine", value: "b", effect: "PreferNoSchedule" },
      { key: "theirs", value: "t", effect: "NoSchedule" },
    ]);
    expect([...owned].sort()).toEqual(["mine"]);
    expect(skipped).toEqual(["theirs"]);
  });
});

describe("applyToNode", () => {
  const node = (meta: NodeObject["metadata"], spec: NodeObject["spec"] = {}): NodeObject => ({ apiVersion: "v1", kind: "Node", metadata: { name: "n1", ...meta }, spec });

  it("records what it owns in the talos.dev/owned-* annotations, sorted, and drops them when empty", () => {
    const wants: NodeWants = {
      labels: { "node-role.kubernetes.io/control-plane": "", zone: "a" },
      annotations: { note: "hi" },
      taints: [{ key: "node-role.kubernetes.io/control-plane", value: "", effect: "NoSchedule" }],
      cordon: false,
    };
    const out = applyToNode(node({ labels: { "kubernetes.io/hostname": "n1" } }), wants);
    expect(out.metadata?.labels).toEqual({ "kubernetes.io/hostname": "n1", "node-role.kubernetes.io/control-plane": "", zone: "a" });
    expect(out.metadata?.annotations).toEqual({
      note: "hi",
      "talos.dev/owned-labels": '["node-role.kubernetes.io/control-plane","zone"]',
      "talos.dev/owned-annotations": '["note"]',
      "talos.dev/owned-taints": '["node-role.kubernetes.io/control-plane"]',
    });
    expect(out.spec?.taints).toEqual([{ key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" }]);

    // Nothing wanted any more: everything owned goes, the kubelet's own label stays, the bookkeeping goes too.
    const back = applyToNode(out, none);
    expect(back.metadata?.labels).toEqual({ "kubernetes.io/hostname": "n1" });
    expect(back.metadata?.annotations).toEqual({});
    expect(back.spec?.taints).toBeUndefined();
    expect(nodeChanged(out, back)).toBe(true);
    expect(nodeChanged(back, applyToNode(back, none))).toBe(false);
  });

  it("cordons with the talos.dev/cordoned annotation and undoes only its own cordon", () => {
    const cordoned = applyToNode(node({}), { ...none, cordon: true });
    expect(cordoned.spec?.unschedulable).toBe(true);
    expect(cordoned.metadata?.annotations).toEqual({ "talos.dev/cordoned": "true" });
    const uncordoned = applyToNode(cordoned, none);
    expect(uncordoned.spec?.unschedulable).toBeUndefined();
    expect(uncordoned.metadata?.annotations).toEqual({});
    // An operator's `kubectl cordon` (no annotation) is theirs.
    expect(applyToNode(node({}, { unschedulable: true }), none).spec?.unschedulable).toBe(true);
    // Already unschedulable by someone else: Talos does not claim it.
    expect(applyToNode(node({}, { unschedulable: true }), { ...none, cordon: true }).metadata?.annotations).toEqual({});
  });

  it("fails naming the annotation when an ownership annotation is not a JSON list", () => {
    expect(() => applyToNode(node({ annotations: { "talos.dev/owned-labels": "{oops" } }), none)).toThrow(/talos.dev\/owned-labels is not JSON/);
    expect(() => ownedKeys({ "talos.dev/owned-taints": '{"a":1}' }, "talos.dev/owned-taints")).toThrow("annotation talos.dev/owned-taints is not a list of strings");
    expect([...ownedKeys({ x: "null" }, "x")]).toEqual([]);
  });

  it("does not change the Node it is given", () => {
    const n = node({ labels: {} });
    applyToNode(n, { ...none, labels: { a: "1" } });
    expect(n.metadata?.labels).toEqual({});
  });
});

describe("parseNodeTaint", () => {
  it("cuts value and effect at the first colon; a bare text is the effect", () => {
    expect(parseNodeTaint("infra:NoSchedule")).toEqual({ value: "infra", effect: "NoSchedule" });
    expect(parseNodeTaint("NoExecute")).toEqual({ value: "", effect: "NoExecute" });
    expect(parseNodeTaint("a:b:NoSchedule")).toEqual({ value: "a", effect: "b:NoSchedule" });
  });
});
