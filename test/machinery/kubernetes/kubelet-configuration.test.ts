/**
 * The KubeletConfiguration document: the control plane's NoSchedule taint at registration (upstream
 * kubelet_spec.go), and when it is left out.
 */
import { describe, expect, it } from "vitest";
import { kubeletConfiguration } from "../../../src/machinery/kubernetes/kubelet-configuration.js";
import type { KubeletConfigSpec } from "../../../src/machinery/resources/types/k8s.js";

const CP_TAINT = { key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" };

function spec(over: Partial<KubeletConfigSpec> = {}): KubeletConfigSpec {
  return {
    image: "ghcr.io/siderolabs/kubelet:v1.37.2",
    clusterDNS: ["10.96.0.10"],
    clusterDomain: "cluster.local",
    extraArgs: {},
    extraMounts: [],
    extraConfig: {},
    cloudProviderExternal: false,
    defaultRuntimeSeccompEnabled: false,
    skipNodeRegistration: false,
    staticPodListURL: "http://127.0.0.1:1234",
    disableManifestsDirectory: false,
    enableFSQuotaMonitoring: false,
    allowSchedulingOnControlPlane: false,
    ...over,
  };
}

describe("kubeletConfiguration registerWithTaints", () => {
  it("registers a control plane (init too) with the control-plane NoSchedule taint", () => {
    expect(kubeletConfiguration(spec(), "controlplane").registerWithTaints).toEqual([CP_TAINT]);
    expect(kubeletConfiguration(spec(), "init").registerWithTaints).toEqual([CP_TAINT]);
  });

  it("keeps the taints extraConfig gives and adds the control plane's after them", () => {
    const c = kubeletConfiguration(spec({ extraConfig: { registerWithTaints: [{ key: "dedicated", value: "infra", effect: "NoExecute" }] } }), "controlplane");
    expect(c.registerWithTaints).toEqual([{ key: "dedicated", value: "infra", effect: "NoExecute" }, CP_TAINT]);
  });

  it("does not add the taint twice when extraConfig already has its key", () => {
    const own = { key: "node-role.kubernetes.io/control-plane", effect: "PreferNoSchedule" };
    expect(kubeletConfiguration(spec({ extraConfig: { registerWithTaints: [own] } }), "controlplane").registerWithTaints).toEqual([own]);
  });

  it("leaves it out on workers, with allowSchedulingOnControlPlanes, with --register-with-taints, and without registration", () => {
    expect(kubeletConfiguration(spec(), "worker").registerWithTaints).toBeUndefined();
    expect(kubeletConfiguration(spec({ allowSchedulingOnControlPlane: true }), "controlplane").registerWithTaints).toBeUndefined();
    expect(kubeletConfiguration(spec({ extraArgs: { "register-with-taints": { values: ["a=b:NoSchedule"] } } }), "controlplane").registerWithTaints).toBeUndefined();
    const skip = kubeletConfiguration(spec({ skipNodeRegistration: true }), "controlplane");
    expect(skip.registerWithTaints).toBeUndefined();
    expect(skip.authorization).toEqual({ mode: "AlwaysAllow" });
  });
});
