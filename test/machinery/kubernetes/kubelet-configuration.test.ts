import { describe, expect, it } from "vitest";
import { kubeletConfiguration } from "../../../src/machinery/kubernetes/kubelet-configuration.js";
import type { KubeletConfigSpec } from "../../../src/machinery/resources/types/k8s.js";

const base: KubeletConfigSpec = {
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
  disableManifestsDirectory: true,
  enableFSQuotaMonitoring: false,
  allowSchedulingOnControlPlane: false,
  registerWithTaints: {},
};
const CP_TAINT = { key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" };

describe("kubeletConfiguration: the control plane's registration taint", () => {
  it("a control plane registers with node-role.kubernetes.io/control-plane:NoSchedule", () => {
    expect(kubeletConfiguration(base, "controlplane").registerWithTaints).toEqual([CP_TAINT]);
    expect(kubeletConfiguration(base, "init").registerWithTaints).toEqual([CP_TAINT]);
  });

  it("not when scheduling on control planes is allowed, not on a worker, not without registration", () => {
    expect(kubeletConfiguration({ ...base, allowSchedulingOnControlPlane: true }, "controlplane").registerWithTaints).toBeUndefined();
    expect(kubeletConfiguration(base, "worker").registerWithTaints).toBeUndefined();
    expect(kubeletConfiguration({ ...base, skipNodeRegistration: true }, "controlplane").registerWithTaints).toBeUndefined();
  });

  it("the user's own taint of that key (extraConfig) or register-with-taints flag wins", () => {
    const own = { key: "node-role.kubernetes.io/control-plane", effect: "PreferNoSchedule" };
    expect(kubeletConfiguration({ ...base, extraConfig: { registerWithTaints: [own] } }, "controlplane").registerWithTaints).toEqual([own]);
    const flag = { ...base, extraArgs: { "register-with-taints": { values: ["a=b:NoSchedule"] } } };
    expect(kubeletConfiguration(flag, "controlplane").registerWithTaints).toBeUndefined();
  });
});
