import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../../src/machinery/config/index.js";
import { FIXTURES, fixture, hasFixtures } from "./fixtures.js";

function loadError(text: string): ConfigError {
  try {
    loadConfig(text);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error("expected loadConfig to fail");
}

describe.skipIf(!hasFixtures)("loading the upstream fixture configs", () => {
  const machineConfigs = !hasFixtures ? [] : readdirSync(join(FIXTURES, "configs")).filter((f) => !f.includes("secrets"));

  it("finds the expected fixture files", () => {
    expect(machineConfigs).toEqual(
      expect.arrayContaining(["controlplane.yaml", "worker.yaml", "loader-multidoc1.yaml", "loader-empty1.yaml"]),
    );
  });

  it.each(machineConfigs)("%s loads", (name) => {
    const cfg = loadConfig(fixture("configs", name));
    expect(cfg.documents.length).toBeGreaterThan(0);
    expect(cfg.warnings).toEqual([]);
  });

  it("reads the typed fields of a generated control plane config", () => {
    const cfg = loadConfig(fixture("configs", "loader-controlplane.yaml"));
    const v = cfg.v1alpha1()!;
    expect(cfg.machineType()).toBe("controlplane");
    expect(cfg.endpoint()).toBe("https://1.2.3.4:6443");
    expect(cfg.clusterName()).toBe("test");
    expect(v.machine.token).toBe("7a10fa.izhckmwn5xmsjwi5");
    expect(v.machine.install?.disk).toBe("/dev/sda");
    expect(v.machine.certSANs).toEqual([]);
    expect(atob(v.machine.ca!.crt!)).toContain("-----BEGIN CERTIFICATE-----");
    expect(atob(v.machine.ca!.key!)).toContain("ED25519 PRIVATE KEY");
    expect(v.cluster.network?.podSubnets).toEqual(["10.244.0.0/16"]);
    expect(v.cluster.id).toBe("Ahg8OEr1t2urQH2wcG2_g0-t1Rtf-QRtA3uBCIe9S3w=");
    expect(cfg.machine?.features?.rbac).toBe(true);
  });

  it("treats `machine:` without a version as the v1alpha1 document (worker by upstream's rules)", () => {
    const cfg = loadConfig(fixture("configs", "loader-empty1.yaml"));
    expect(cfg.documents.map((d) => d.kind)).toEqual(["v1alpha1"]);
    expect(cfg.v1alpha1()?.machine).toEqual({});
    expect(cfg.machineType()).toBe("worker");
  });

  it("loads kind-only configs without a v1alpha1 document", () => {
    const cfg = loadConfig(fixture("configs", "loader-multidoc1.yaml"));
    expect(cfg.v1alpha1()).toBeUndefined();
    expect(cfg.machineType()).toBe("unknown");
    expect(cfg.documents.map((d) => d.kind)).toEqual(["SideroLinkConfig", "KmsgLogConfig", "EventSinkConfig"]);
    expect(cfg.document("KmsgLogConfig", "apiSink")?.data.url).toBe("tcp://[fdae:41e4:649b:9303::1]:4001/");
    expect(cfg.documentsOfKind("NetworkRuleConfig")).toHaveLength(0);
  });

  it("rejects a secrets bundle loaded as a machine config, naming the foreign keys", () => {
    const err = loadError(fixture("configs", "invalid-secrets.yaml"));
    expect(err.message).toContain("secrets: unknown keys found during decoding");
    expect(err.message).toContain("certs: unknown keys found during decoding");
  });
});

describe("documents", () => {
  it("skips empty documents and keeps the original bytes", () => {
    const text = "---\n---\nversion: v1alpha1 # comment stays\nmachine:\n  type: worker\n---\n\n";
    const bytes = new TextEncoder().encode(text);
    const cfg = loadConfig(bytes);
    expect(cfg.documents).toHaveLength(1);
    expect(cfg.encode()).toEqual(bytes);
    expect(cfg.toString()).toBe(text);
    expect(loadConfig(text).encode()).toEqual(bytes);
    bytes.fill(0); // the config keeps its own copy
    expect(new TextDecoder().decode(cfg.encode())).toBe(text);
  });

  it("keeps unknown kinds and reports them", () => {
    const text = "version: v1alpha1\nmachine: {type: worker}\n---\napiVersion: v1alpha1\nkind: FancyNewConfig\nname: x\nfoo: [1, 2]\n";
    const cfg = loadConfig(text);
    expect(cfg.documents.map((d) => [d.kind, d.known])).toEqual([
      ["v1alpha1", true],
      ["FancyNewConfig", false],
    ]);
    expect(cfg.document("FancyNewConfig")?.data.foo).toEqual([1, 2]);
    expect(cfg.warnings).toEqual(['unknown document kind "FancyNewConfig" (apiVersion "v1alpha1") at line 4 is kept as is']);
    // Round trip through a modification keeps the unknown document.
    const next = cfg.withV1Alpha1((v) => {
      v.machine.token = "abc";
    });
    expect(next.document("FancyNewConfig")?.data).toEqual({ apiVersion: "v1alpha1", kind: "FancyNewConfig", name: "x", foo: [1, 2] });
    expect(next.warnings).toHaveLength(1);
  });

  it("knows upstream kinds such as HostnameConfig", () => {
    const cfg = loadConfig("apiVersion: v1alpha1\nkind: HostnameConfig\nhostname: node-1\n");
    expect(cfg.documents[0].known).toBe(true);
    expect(cfg.warnings).toEqual([]);
  });

  it("rejects documents missing kind or apiVersion, and duplicates", () => {
    expect(loadError("apiVersion: v1alpha1\nfoo: bar\n").message).toBe("kind: missing kind (document at line 1)");
    expect(loadError("kind: KmsgLogConfig\nname: a\n").message).toBe("apiVersion: missing apiVersion (document at line 1)");
    expect(loadError("foo: bar\n").message).toBe("missing kind (document at line 1)");
    const dup = "apiVersion: v1alpha1\nkind: KmsgLogConfig\nname: a\n---\napiVersion: v1alpha1\nkind: KmsgLogConfig\nname: a\n";
    expect(loadError(dup).message).toBe("duplicate document v1alpha1/KmsgLogConfig/a is not allowed (line 5)");
    expect(() => loadConfig(dup.replace(/name: a\n$/, "name: b\n"))).not.toThrow();
  });

  it("fails on an empty input", () => {
    expect(loadError("").message).toBe("config not found");
    expect(loadError("---\n# nothing\n").message).toBe("config not found");
  });
});

describe("load errors", () => {
  it("gives line and column for malformed YAML", () => {
    const err = loadError("version: v1alpha1\nmachine:\n  type: worker\n   token: [x\n");
    expect(err.message).toMatch(/^malformed YAML at line \d+, column \d+: /);
    expect(err.line).toBeGreaterThanOrEqual(3);
    expect(err.column).toBeGreaterThan(0);
    expect(err.path).toBe("");
  });

  it("rejects duplicate keys like go-yaml", () => {
    expect(loadError("version: v1alpha1\nmachine:\n  type: worker\n  type: init\n").message).toMatch(/^malformed YAML at line 4/);
  });

  it("rejects an unknown version", () => {
    const err = loadError("version: v2\nmachine: {}\n");
    expect(err.message).toBe('version: unknown version "v2"');
    expect(err.path).toBe("version");
  });

  it("names the path and the value of a wrongly typed field", () => {
    const text = [
      "version: v1alpha1",
      "machine:",
      "  network:",
      "    interfaces:",
      "      - interface: eth0",
      "        mtu: abc",
    ].join("\n");
    const err = loadError(text);
    expect(err.message).toBe('machine.network.interfaces[0].mtu: expected number, got string "abc"');
    expect(err.path).toBe("machine.network.interfaces[0].mtu");
    expect(err.line).toBe(6);
  });

  it("rejects quoted numbers, fractions and negative unsigned values", () => {
    expect(loadError('machine:\n  network:\n    interfaces: [{interface: eth0, mtu: "1500"}]\n').message).toBe(
      'machine.network.interfaces[0].mtu: expected number, got string "1500"',
    );
    expect(loadError("machine:\n  network:\n    interfaces: [{interface: eth0, mtu: 1.5}]\n").message).toBe(
      "machine.network.interfaces[0].mtu: expected integer, got number 1.5",
    );
    expect(loadError("machine:\n  network:\n    interfaces: [{routes: [{metric: -1}]}]\n").message).toBe(
      "machine.network.interfaces[0].routes[0].metric: expected a non-negative integer, got number -1",
    );
  });

  it("reports unknown keys with their path", () => {
    const err = loadError("version: v1alpha1\nmachine:\n  network:\n    hostnam: x\n");
    expect(err.message).toBe("machine.network.hostnam: unknown keys found during decoding");
    expect(err.line).toBe(4);
  });

  it("lists every problem in reading order", () => {
    const err = loadError("machine:\n  certSANs: {a: 1}\n  bogus: 1\ncluster:\n  clusterName: [x]\n");
    expect(err.issues.map((i) => i.message)).toEqual([
      "machine.certSANs: expected list, got map",
      "machine.bogus: unknown keys found during decoding",
      "cluster.clusterName: expected string, got list",
    ]);
  });

  it("rejects invalid base64 in certificates", () => {
    expect(loadError("machine:\n  ca:\n    crt: not*base64\n").message).toBe('machine.ca.crt: invalid base64 "not*base64"');
  });

  it("explains a wrong extraArgs value", () => {
    expect(loadError("machine:\n  kubelet:\n    extraArgs:\n      foo: {a: b}\n").message).toBe(
      "machine.kubelet.extraArgs.foo: expected string or list, got map",
    );
  });
});

describe("typed view", () => {
  it("decodes like go-yaml: scalars into strings, Go octal, legacy booleans", () => {
    const cfg = loadConfig(
      [
        "machine:",
        "  token: 1234",
        "  sysctls:",
        "    net.ipv4.ip_forward: 1",
        "  files:",
        "    - {content: x, path: /var/a, op: create, permissions: 0644}",
        "    - {content: y, path: /var/b, op: create, permissions: 0o600}",
        "  network:",
        "    interfaces: [{interface: eth0, dhcp: yes}]",
      ].join("\n"),
    );
    const m = cfg.v1alpha1()!.machine;
    expect(m.token).toBe("1234");
    expect(m.sysctls).toEqual({ "net.ipv4.ip_forward": "1" });
    expect(m.files?.map((f) => f.permissions)).toEqual([0o644, 0o600]);
    expect(m.network?.interfaces?.[0].dhcp).toBe(true);
  });

  it("treats empty and null sections as absent", () => {
    const cfg = loadConfig("version: v1alpha1\nmachine:\n  network:\n  kubelet: null\ncluster:\n");
    expect(cfg.v1alpha1()!.machine).toEqual({});
    expect(cfg.v1alpha1()!.cluster).toEqual({});
  });

  it.skipIf(!hasFixtures)("is frozen; modifications go through withV1Alpha1", () => {
    const cfg = loadConfig(fixture("configs", "loader-worker.yaml"));
    expect(() => {
      (cfg.v1alpha1()!.machine as { token?: string }).token = "x";
    }).toThrow();
    const next = cfg.withV1Alpha1((v) => {
      v.machine.network = { hostname: "node-7" };
      v.machine.certSANs = ["10.0.0.7"];
    });
    expect(next.hostname()).toBe("node-7");
    expect(next.v1alpha1()!.machine.certSANs).toEqual(["10.0.0.7"]);
    expect(cfg.hostname()).toBeUndefined();
    expect(next.encode()).not.toEqual(cfg.encode());
    expect(next.toString()).toContain("hostname: node-7");
    // Key order follows the original document, not the schema.
    const text = next.toString();
    expect(text.indexOf("version:")).toBeLessThan(text.indexOf("machine:"));
    expect(text.indexOf("machine:")).toBeLessThan(text.indexOf("cluster:"));
  });

  it("withV1Alpha1 validates what the mutator produced", () => {
    const cfg = loadConfig("version: v1alpha1\nmachine:\n  type: worker\n");
    expect(() =>
      cfg.withV1Alpha1((v) => {
        (v.machine as Record<string, unknown>).type = { bad: true };
      }),
    ).toThrow("machine.type: expected string, got map");
  });

  it("withV1Alpha1 adds a v1alpha1 document to a kind-only config", () => {
    const cfg = loadConfig("apiVersion: v1alpha1\nkind: HostnameConfig\nhostname: a\n");
    const next = cfg.withV1Alpha1((v) => {
      v.machine.type = "worker";
    });
    expect(next.documents.map((d) => d.kind)).toEqual(["v1alpha1", "HostnameConfig"]);
    expect(next.machineType()).toBe("worker");
    expect(next.v1alpha1()!.cluster).toEqual({});
    expect(next.toString()).not.toContain("cluster");
  });

  it("maps machine types like upstream", () => {
    const type = (t: string) => loadConfig(`machine:\n  type: "${t}"\n`).machineType();
    expect(type("controlplane")).toBe("controlplane");
    expect(type("init")).toBe("init");
    expect(type("worker")).toBe("worker");
    expect(type("join")).toBe("worker");
    expect(type("")).toBe("worker");
    expect(type("master")).toBe("unknown");
  });
});
