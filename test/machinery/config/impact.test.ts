import { describe, expect, it } from "vitest";
import { changeImpact, ConfigError, loadConfig } from "../../../src/machinery/config/index.js";
import { fixture, hasFixtures } from "./fixtures.js";

// Read only where the fixtures exist (otherwise the suite below is skipped, and the helper says why).
const base = hasFixtures ? loadConfig(fixture("configs", "loader-controlplane.yaml")) : (undefined as never);

describe.skipIf(!hasFixtures)("changeImpact", () => {
  it("finds nothing for the same config", () => {
    expect(changeImpact(base, base)).toEqual({ changed: [], rebootRequired: [], live: [] });
  });

  it("applies network, SANs, kubelet and control plane settings live", () => {
    const next = base.withV1Alpha1((v) => {
      v.machine.network = { hostname: "cp-1" };
      v.machine.certSANs = ["10.0.0.10"];
      v.machine.kubelet = { extraArgs: { "node-ip": "10.0.0.10" } };
      v.cluster.apiServer = { certSANs: ["api.example.com"] };
      v.machine.time = { servers: ["time.cloudflare.com"] };
    });
    const impact = changeImpact(base, next);
    expect(impact.changed).toEqual(
      expect.arrayContaining(["machine.network.hostname", "machine.certSANs", "machine.kubelet.extraArgs", "cluster.apiServer.certSANs[0]", "machine.time"]),
    );
    expect(impact.rebootRequired).toEqual([]);
    expect(impact.live).toEqual(impact.changed);
  });

  it("needs a reboot for install, kernel, disks and disk encryption", () => {
    const next = base.withV1Alpha1((v) => {
      v.machine.install = { ...v.machine.install, disk: "/dev/nvme0n1" };
      v.machine.kernel = { modules: [{ name: "br_netfilter" }] };
      v.machine.disks = [{ device: "/dev/sdb" }];
      v.machine.network = { hostname: "cp-1" };
    });
    const impact = changeImpact(base, next);
    expect(impact.rebootRequired.sort()).toEqual(["machine.disks", "machine.install.disk", "machine.kernel"]);
    expect(impact.live).toEqual(["machine.network.hostname"]);
  });

  it("classifies other documents by kind", () => {
    const more = loadConfig(`${base.toString()}---\napiVersion: v1alpha1\nkind: KmsgLogConfig\nname: remote\nurl: tcp://10.0.0.1:514\n---\napiVersion: v1alpha1\nkind: VolumeConfig\nname: EPHEMERAL\n`);
    const impact = changeImpact(base, more);
    expect(impact.changed).toEqual(["KmsgLogConfig/remote", "VolumeConfig/EPHEMERAL"]);
    expect(impact.rebootRequired).toEqual(["VolumeConfig/EPHEMERAL"]);
  });

  it("refuses a change of machine type, but not init to controlplane", () => {
    const worker = base.withV1Alpha1((v) => {
      v.machine.type = "worker";
    });
    expect(() => changeImpact(base, worker)).toThrow(ConfigError);
    expect(() => changeImpact(base, worker)).toThrow(
      'machine.type: the machine type can\'t be changed from "controlplane" to "worker" on a running node',
    );
    const init = base.withV1Alpha1((v) => {
      v.machine.type = "init";
    });
    expect(changeImpact(base, init).changed).toEqual(["machine.type"]);
  });
});
