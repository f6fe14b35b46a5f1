import { describe, expect, it } from "vitest";
import { ConfigValidationError, loadConfig, validateConfig, type ValidationMode } from "../../../src/machinery/config/index.js";
import { fixture, hasFixtures } from "./fixtures.js";

// Read only where the fixtures exist (otherwise the suite below is skipped, and the helper says why).
const base = hasFixtures ? loadConfig(fixture("configs", "loader-controlplane.yaml")) : (undefined as never);

/** The generated control plane config with `edit` applied. */
function variant(edit: Parameters<typeof base.withV1Alpha1>[0]) {
  return base.withV1Alpha1(edit);
}

function problems(cfg: ReturnType<typeof loadConfig>, mode: ValidationMode = "metal"): string[] {
  try {
    validateConfig(cfg, { mode });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigValidationError);
    const e = err as ConfigValidationError;
    expect(e.message).toBe(e.problems.join("\n"));
    return e.problems;
  }
  return [];
}

describe.skipIf(!hasFixtures)("validateConfig", () => {
  it("accepts the generated configs", () => {
    expect(validateConfig(base, { mode: "metal" })).toEqual({ warnings: [] });
    const cp = loadConfig(fixture("configs", "controlplane.yaml"));
    expect(validateConfig(cp, { mode: "container" }).warnings).toEqual([
      "machine.files: .machine.files is deprecated; use dedicated configuration documents instead",
    ]);
    expect(problems(loadConfig(fixture("configs", "worker.yaml")))).toEqual([]);
  });

  it("has nothing to check without a v1alpha1 document", () => {
    expect(validateConfig(loadConfig(fixture("configs", "loader-multidoc1.yaml")), { mode: "metal" })).toEqual({ warnings: [] });
  });

  it("names the path and value of an invalid address", () => {
    const cfg = variant((v) => {
      v.machine.network = { interfaces: [{ interface: "eth0", addresses: ["10.0.0.2/24", "10.0.0.1/33", "10.0.0.300"] }] };
    });
    expect(problems(cfg)).toEqual([
      'machine.network.interfaces[0].addresses[1]: invalid CIDR "10.0.0.1/33"',
      'machine.network.interfaces[0].addresses[2]: invalid IP address "10.0.0.300"',
    ]);
  });

  it("checks IPv6 addresses and routes", () => {
    const cfg = variant((v) => {
      v.machine.network = {
        interfaces: [
          {
            interface: "eth0",
            addresses: ["fd00::1/64", "2001:db8::/129"],
            routes: [{ network: "0.0.0.0/0", gateway: "fe80::1" }, { network: "10.0.0.0/8", gateway: "nope" }, {}],
          },
        ],
      };
    });
    expect(problems(cfg)).toEqual([
      'machine.network.interfaces[0].addresses[1]: invalid CIDR "2001:db8::/129"',
      'machine.network.interfaces[0].routes[1].gateway: invalid IP address "nope"',
      "machine.network.interfaces[0].routes[2]: either network or gateway should be set",
    ]);
  });

  it("requires an https control plane endpoint", () => {
    const bad = (endpoint: string) =>
      problems(
        variant((v) => {
          v.cluster.controlPlane = { endpoint };
        }),
      );
    expect(bad("http://1.2.3.4:6443")).toEqual([
      'cluster.controlPlane.endpoint: invalid controlplane endpoint: URL scheme must be https, got "http://1.2.3.4:6443"',
    ]);
    expect(bad("1.2.3.4")).toEqual(['cluster.controlPlane.endpoint: invalid controlplane endpoint: invalid URL "1.2.3.4"']);
    expect(bad("https://cp.example.com:6443")).toEqual([]);
  });

  it("rejects an unknown machine type", () => {
    const cfg = variant((v) => {
      v.machine.type = "master";
    });
    expect(problems(cfg)).toEqual(['machine.type: unknown machine type "master" (expected one of controlplane, worker, init)']);
  });

  it("needs an install disk or selector on metal, not in a container, and allows an image file locally", () => {
    const noDisk = variant((v) => {
      v.machine.install = { image: "ghcr.io/siderolabs/installer:v1.9.0" };
    });
    expect(problems(noDisk, "metal")).toEqual(["machine.install: either install disk or diskSelector should be defined"]);
    expect(problems(noDisk, "container")).toEqual([]);
    expect(problems(noDisk, "local")).toEqual([]);

    const selector = variant((v) => {
      v.machine.install = { diskSelector: { size: ">= 100GB", type: "nvme" } };
    });
    expect(problems(selector, "metal")).toEqual([]);
    const badSize = variant((v) => {
      v.machine.install = { diskSelector: { size: ">= lots" } };
    });
    expect(problems(badSize, "metal")).toEqual(['machine.install.diskSelector.size: failed to parse disk size ">= lots"']);

    const imageFile = variant((v) => {
      v.machine.install = { disk: "/var/lib/machined/disk.raw" };
    });
    expect(problems(imageFile, "local")).toEqual([]);
    const relative = variant((v) => {
      v.machine.install = { disk: "disk.raw" };
    });
    expect(problems(relative, "local")).toEqual(['machine.install.disk: expected an absolute file or device path, got "disk.raw"']);
  });

  it("accepts an UnattendedInstallConfig instead of machine.install on metal", () => {
    const text = `${base.toString().replace(/^\s{4}install:[\s\S]*?(?=^\s{4}# Features)/m, "")}---\napiVersion: v1alpha1\nkind: UnattendedInstallConfig\n`;
    const cfg = loadConfig(text);
    expect(cfg.v1alpha1()!.machine.install).toBeUndefined();
    expect(problems(cfg, "metal")).toEqual([]);
  });

  it("enforces worker restrictions", () => {
    const cfg = variant((v) => {
      v.machine.type = "worker";
      delete v.cluster.etcd;
      v.machine.network = { interfaces: [{ interface: "eth0", dhcp: true, vip: { ip: "10.0.0.50" } }] };
    });
    expect(problems(cfg)).toEqual([
      "machine.ca.key: issuing Talos API CA key is not allowed on non-controlplane nodes",
      "cluster.ca.key: cluster CA key is not allowed on non-controlplane nodes",
      "machine.network.interfaces[0].vip: virtual (shared) IP is not allowed on non-controlplane nodes",
    ]);
  });

  it("requires machine and cluster sections", () => {
    expect(problems(loadConfig("version: v1alpha1\ncluster: {}\n"))).toEqual(["machine: machine instructions are required"]);
    const noCluster = loadConfig(fixture("configs", "loader-controlplane.yaml").replace(/^cluster:[\s\S]*$/m, ""));
    expect(problems(noCluster)).toEqual(["cluster: cluster instructions are required"]);
  });

  it("reports every problem, one per line", () => {
    const cfg = variant((v) => {
      v.persist = false;
      v.cluster.network = { dnsDomain: "bad domain", podSubnets: ["10.244.0.0/16", "10.244.0.0"], cni: { name: "weave" } };
      v.machine.nodeLabels = { "Bad Label": "x" };
      v.machine.nodeTaints = { dedicated: "gpu:Sometimes" };
      v.machine.logging = { destinations: [{ endpoint: "http://10.0.0.1:514", format: "syslog" }] };
    });
    const err = (() => {
      try {
        validateConfig(cfg, { mode: "metal" });
      } catch (e) {
        return e as ConfigValidationError;
      }
      throw new Error("expected failure");
    })();
    expect(err.message.split("\n")).toEqual([
      'cluster.network.dnsDomain: "bad domain" is not a valid DNS name',
      'cluster.network.podSubnets[1]: invalid CIDR "10.244.0.0"',
      'cluster.network.cni.name: cni name should be one of ["flannel", "custom", "none"], got "weave"',
      'machine.logging.destinations[0].endpoint: unexpected logging endpoint scheme "http"',
      'machine.logging.destinations[0].format: unknown logging format "syslog"',
      'machine.nodeLabels["Bad Label"]: name "Bad Label" is invalid',
      'machine.nodeTaints.dedicated: invalid taint effect: "Sometimes"',
      "persist: .persist should be enabled",
    ]);
  });

  it("checks bonds", () => {
    const cfg = variant((v) => {
      v.machine.network = {
        interfaces: [
          { interface: "bond0", bond: { interfaces: ["eth0", "eth1"], mode: "active-backup", lacpRate: "fast", updelay: 200 } },
          { interface: "eth0", dhcp: true },
          { interface: "br0", bridge: { interfaces: ["eth1"] } },
        ],
      };
    });
    expect(problems(cfg)).toEqual([
      'machine.network.interfaces[2]: interface "eth1" is declared as part of two separate links: "bond0" and "br0"',
      "machine.network.interfaces[0].bond.updelay: bond.upDelay can't be set if miiMon is zero",
      "machine.network.interfaces[0].bond.lacpRate: bond.lacpRate is only available in 802.3ad mode",
      'machine.network.interfaces[1]: bonded/bridged interface "eth0" shouldn\'t have any addressing methods configured',
    ]);
  });

  it("returns warnings, or fails on them in strict mode", () => {
    const cfg = variant((v) => {
      v.machine.type = "join";
    });
    // join means worker: the control plane CA keys now make it invalid, so test the warning on a clean worker.
    expect(problems(cfg)).toContain("machine.ca.key: issuing Talos API CA key is not allowed on non-controlplane nodes");
    const worker = loadConfig(fixture("configs", "worker.yaml")).withV1Alpha1((v) => {
      v.machine.type = "join";
    });
    expect(validateConfig(worker, { mode: "metal" }).warnings).toEqual(['machine.type: use "worker" instead of "join" for machine type']);
    expect(() => validateConfig(worker, { mode: "metal", strict: true })).toThrow(
      'warning: machine.type: use "worker" instead of "join" for machine type',
    );
  });
});
