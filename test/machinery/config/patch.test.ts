import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { applyPatches, ConfigError, loadConfig, parsePatch, resolvePatchArg } from "../../../src/machinery/config/index.js";
import { loadPatches } from "../../../src/machinery/config/patch/index.js";
import { fixture, FIXTURES, hasFixtures, normalize } from "./fixtures.js";

/** Applies inline patch texts and returns the resulting v1alpha1 document as plain data. */
function patched(config: string, ...patches: string[]): Record<string, unknown> {
  const out = applyPatches(config, patches.map(parsePatch));
  return JSON.parse(JSON.stringify(loadConfig(out).v1alpha1()));
}

function errorOf(fn: () => unknown): Error {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error("expected a failure");
}

const base = `version: v1alpha1
machine:
  type: worker
  certSANs: [a.example.com]
  network:
    hostname: node-1
    interfaces:
      - interface: eth0
        dhcp: true
        addresses: [10.0.0.2/24]
        vlans:
          - vlanId: 10
            addresses: [10.10.0.2/24]
      - deviceSelector: {hardwareAddr: "aa:bb:*"}
        mtu: 9000
  kubelet:
    extraArgs:
      feature-gates: [A=true, B=true]
      rotate-server-certificates: "true"
  nodeLabels:
    zone: a
    rack: r1
cluster:
  network:
    podSubnets: [10.244.0.0/16]
    serviceSubnets: [10.96.0.0/12]
  apiServer:
    admissionControl:
      - name: PodSecurity
        configuration: {defaults: {enforce: baseline, audit: restricted}}
    auditPolicy:
      kind: Policy
      rules: [{level: Metadata}]
`;

describe("strategic merge", () => {
  it("merges network interfaces by name and appends unknown ones", () => {
    const v = patched(base, "machine:\n  network:\n    interfaces:\n      - interface: eth0\n        dhcp: false\n        mtu: 1400\n      - interface: eth1\n        dhcp: true\n");
    const ifaces = (v.machine as any).network.interfaces;
    expect(ifaces.map((i: any) => i.interface ?? i.deviceSelector)).toEqual(["eth0", { hardwareAddr: "aa:bb:*" }, "eth1"]);
    expect(ifaces[0]).toMatchObject({ dhcp: false, mtu: 1400, addresses: ["10.0.0.2/24"] });
  });

  it("matches interfaces by deviceSelector", () => {
    const v = patched(base, 'machine:\n  network:\n    interfaces:\n      - deviceSelector: {hardwareAddr: "aa:bb:*"}\n        dhcp: true\n');
    const ifaces = (v.machine as any).network.interfaces;
    expect(ifaces).toHaveLength(2);
    expect(ifaces[1]).toEqual({ deviceSelector: { hardwareAddr: "aa:bb:*" }, mtu: 9000, dhcp: true });
  });

  it("merges VLANs by vlanId and appends plain lists", () => {
    const v = patched(
      base,
      "machine:\n  certSANs: [b.example.com]\n  network:\n    interfaces:\n      - interface: eth0\n        addresses: [10.0.0.3/24]\n        vlans:\n          - vlanId: 10\n            addresses: [10.10.0.3/24]\n          - vlanId: 20\n            dhcp: true\n",
    );
    const m = v.machine as any;
    expect(m.certSANs).toEqual(["a.example.com", "b.example.com"]);
    expect(m.network.interfaces[0].addresses).toEqual(["10.0.0.2/24", "10.0.0.3/24"]);
    expect(m.network.interfaces[0].vlans).toEqual([
      // Vlan.routes has no omitempty: the Go encoder writes `routes: []`.
      { vlanId: 10, addresses: ["10.10.0.2/24", "10.10.0.3/24"], routes: [] },
      { vlanId: 20, dhcp: true, routes: [] },
    ]);
  });

  it("replaces subnets and the audit policy, merges admission plugins by name", () => {
    const v = patched(
      base,
      "cluster:\n  network:\n    podSubnets: [10.32.0.0/12]\n  apiServer:\n    auditPolicy:\n      kind: Policy\n      rules: [{level: None}]\n    admissionControl:\n      - name: PodSecurity\n        configuration: {defaults: {enforce: privileged}}\n      - name: Other\n        configuration: {}\n",
    );
    const c = v.cluster as any;
    expect(c.network.podSubnets).toEqual(["10.32.0.0/12"]);
    expect(c.network.serviceSubnets).toEqual(["10.96.0.0/12"]);
    expect(c.apiServer.auditPolicy).toEqual({ kind: "Policy", rules: [{ level: "None" }] });
    expect(c.apiServer.admissionControl).toEqual([
      { name: "PodSecurity", configuration: { defaults: { enforce: "privileged", audit: "restricted" } } },
      { name: "Other", configuration: {} },
    ]);
  });

  it("replaces extraArgs values per key instead of merging them", () => {
    const v = patched(base, "machine:\n  kubelet:\n    extraArgs:\n      feature-gates: [C=true]\n      node-ip: 10.0.0.2\n");
    expect((v.machine as any).kubelet.extraArgs).toEqual({
      "feature-gates": ["C=true"],
      "rotate-server-certificates": "true",
      "node-ip": "10.0.0.2",
    });
  });

  it("leaves values alone for empty strings and nulls, but applies false", () => {
    const v = patched(base, 'machine:\n  network:\n    hostname: ""\n    interfaces:\n      - interface: eth0\n        dhcp: false\n  nodeLabels: null\n');
    const m = v.machine as any;
    expect(m.network.hostname).toBe("node-1");
    expect(m.network.interfaces[0].dhcp).toBe(false);
    expect(m.nodeLabels).toEqual({ zone: "a", rack: "r1" });
  });

  it("deletes keys, list items and documents with $patch: delete", () => {
    const config = `${base}---\napiVersion: v1alpha1\nkind: SideroLinkConfig\napiUrl: https://siderolink.example/join\n---\napiVersion: v1alpha1\nkind: KmsgLogConfig\nname: a\nurl: tcp://10.0.0.1:514\n`;
    const patch = [
      "machine:",
      "  network:",
      "    hostname:",
      "      $patch: delete",
      "    interfaces:",
      "      - interface: eth0",
      "        $patch: delete",
      "      - interface: eth0",
      "        dummy: true",
      "  nodeLabels:",
      "    rack:",
      "      $patch: delete",
      "cluster:",
      "  apiServer:",
      "    admissionControl:",
      "      - name: PodSecurity",
      "        $patch: delete",
      "---",
      "apiVersion: v1alpha1",
      "kind: SideroLinkConfig",
      "$patch: delete",
    ].join("\n");
    const out = loadConfig(applyPatches(config, [parsePatch(patch)]));
    const m = out.v1alpha1()!.machine;
    expect(m.network?.hostname).toBeUndefined();
    expect(m.network?.interfaces).toEqual([{ deviceSelector: { hardwareAddr: "aa:bb:*" }, mtu: 9000 }, { interface: "eth0", dummy: true }]);
    expect(m.nodeLabels).toEqual({ zone: "a" });
    // An emptied admissionControl (omitempty) is left out of the written config.
    expect(out.v1alpha1()!.cluster.apiServer?.admissionControl).toBeUndefined();
    expect(out.documents.map((d) => d.kind)).toEqual(["v1alpha1", "KmsgLogConfig"]);
  });

  it("fails to delete what is not there", () => {
    const err = errorOf(() => applyPatches("version: v1alpha1\nmachine: {}\n", [parsePatch("machine:\n  network:\n    hostname:\n      $patch: delete\n")]));
    expect(err.message).toBe(
      "patch delete: path 'machine.network.hostname' in document '/v1alpha1': failed to delete path 'machine.network.hostname': lookup failed",
    );
    // Deleting a document that is not in the config is a no-op.
    expect(() => applyPatches(base, [parsePatch("apiVersion: v1alpha1\nkind: KubeFlannelCNIConfig\n$patch: delete\n")])).not.toThrow();
  });

  it("merges kind documents by kind and name, and adds new ones", () => {
    const config = `${base}---\napiVersion: v1alpha1\nkind: ExtensionServiceConfig\nname: foo\nconfigFiles:\n  - content: hello\n    mountPath: /etc/foo\nenvironment: [FOO=BAR]\n`;
    const patch = `apiVersion: v1alpha1\nkind: ExtensionServiceConfig\nname: foo\nconfigFiles:\n  - content: hello world\n    mountPath: /etc/foo\n  - content: another\n    mountPath: /etc/bar\nenvironment: [XXX=YYY]\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: node-9\n`;
    const out = loadConfig(applyPatches(config, [parsePatch(patch)]));
    expect(out.document("ExtensionServiceConfig", "foo")?.data).toEqual({
      apiVersion: "v1alpha1",
      kind: "ExtensionServiceConfig",
      name: "foo",
      configFiles: [
        { content: "hello world", mountPath: "/etc/foo" },
        { content: "another", mountPath: "/etc/bar" },
      ],
      environment: ["FOO=BAR", "XXX=YYY"],
    });
    expect(out.document("HostnameConfig")?.data.hostname).toBe("node-9");
  });

  it("rejects a patch with a misspelt key, naming it", () => {
    expect(errorOf(() => parsePatch("machine:\n  netwrk:\n    hostname: x\n")).message).toBe("machine.netwrk: unknown keys found during decoding");
  });

  it("rejects a patched config that no longer loads", () => {
    const err = errorOf(() => applyPatches(base, [parsePatch('[{"op": "replace", "path": "/machine/network/hostname", "value": {"a": 1}}]')]));
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toBe("machine.network.hostname: expected string, got map");
  });
});

/**
 * The merge follows the Go types (merge:"replace" tags, Merge methods, reflection on pointers, byte slices and
 * structs). Each expected text below is what upstream's configpatcher (pkg/machinery/config, main branch) wrote for
 * the same config and patch, compared byte for byte.
 */
describe("strategic merge by the Go types", () => {
  const text = (config: string, ...patches: string[]) => applyPatches(config, patches.map(parsePatch));
  const doc = (kind: string, body: string) => `apiVersion: v1alpha1\nkind: ${kind}\n${body}`;

  it("replaces a whole certificate-and-key pair, clearing the part the patch leaves out", () => {
    const config = "version: v1alpha1\nmachine:\n    type: worker\n    ca:\n        crt: Q1JU\n        key: S0VZ\ncluster:\n    clusterName: c\n";
    expect(text(config, "machine:\n  ca:\n    key: TkVX\n")).toBe(
      'version: v1alpha1\nmachine:\n    type: worker\n    token: ""\n    ca:\n        crt: ""\n        key: TkVX\n    certSANs: []\ncluster:\n    clusterName: c\n',
    );
  });

  it("gives CEL expressions and byte sizes the patch's value even when it has none; a percentage size stays", () => {
    const config = doc("UserVolumeConfig", 'name: data\nprovisioning:\n  diskSelector:\n    match: disk.transport == "nvme"\n  minSize: 10GiB\n  maxSize: 50%\n');
    expect(text(config, doc("UserVolumeConfig", "name: data\nprovisioning:\n  grow: true\n"))).toBe(
      "apiVersion: v1alpha1\nkind: UserVolumeConfig\nname: data\nprovisioning:\n    grow: true\n    maxSize: 50%\n",
    );
  });

  it("merges extension service config files by mount path and appends the environment", () => {
    const config = doc("ExtensionServiceConfig", "name: foo\nconfigFiles:\n  - content: a\n    mountPath: /etc/a\n  - content: b\n    mountPath: /etc/b\nenvironment: [A=1]\n");
    const patch = doc("ExtensionServiceConfig", "name: foo\nconfigFiles:\n  - content: a2\n    mountPath: /etc/a\n  - content: c\n    mountPath: /etc/c\nenvironment: [B=2]\n");
    expect(text(config, patch)).toBe(
      "apiVersion: v1alpha1\nkind: ExtensionServiceConfig\nname: foo\nconfigFiles:\n    - content: a2\n      mountPath: /etc/a\n    - content: b\n      mountPath: /etc/b\n    - content: c\n      mountPath: /etc/c\nenvironment:\n    - A=1\n    - B=2\n",
    );
  });

  it("replaces an image verification rule with the same image pattern instead of merging it", () => {
    const config = doc("ImageVerificationConfig", "rules:\n  - image: docker.io/*\n    skip: true\n  - image: ghcr.io/*\n    keyless:\n      issuer: https://token.actions.githubusercontent.com\n      subject: foo\n");
    const patch = doc("ImageVerificationConfig", "rules:\n  - image: ghcr.io/*\n    deny: true\n  - image: quay.io/*\n    skip: true\n");
    expect(text(config, patch)).toBe(
      "apiVersion: v1alpha1\nkind: ImageVerificationConfig\nrules:\n    - image: docker.io/*\n      skip: true\n    - image: ghcr.io/*\n      deny: true\n    - image: quay.io/*\n      skip: true\n",
    );
  });

  it("replaces merge:\"replace\" fields of kind documents (firewall ports and ingress, Kubernetes subnets)", () => {
    const rule = doc("NetworkRuleConfig", "name: r1\nportSelector:\n  ports: [80, 443-445]\n  protocol: tcp\ningress:\n  - subnet: 10.0.0.0/8\n    except: 10.1.0.0/16\n");
    expect(text(rule, doc("NetworkRuleConfig", "name: r1\nportSelector:\n  ports: [22]\ningress:\n  - subnet: 192.168.0.0/16\n"))).toBe(
      "apiVersion: v1alpha1\nkind: NetworkRuleConfig\nname: r1\nportSelector:\n    ports:\n        - 22\n    protocol: tcp\ningress:\n    - subnet: 192.168.0.0/16\n",
    );
    const net = doc("KubeNetworkConfig", "dnsDomain: cluster.local\npodSubnets: [10.244.0.0/16]\nserviceSubnets: [10.96.0.0/12]\n");
    expect(text(net, doc("KubeNetworkConfig", 'dnsDomain: ""\npodSubnets: [10.32.0.0/12]\n'))).toBe(
      "apiVersion: v1alpha1\nkind: KubeNetworkConfig\ndnsDomain: cluster.local\npodSubnets:\n    - 10.32.0.0/12\nserviceSubnets:\n    - 10.96.0.0/12\n",
    );
  });

  it("merges URLs part by part", () => {
    const config = doc("DiscoveryServiceConfig", "name: d\nendpoint: https://disc.example.com:3000/path?x=1\n");
    expect(text(config, doc("DiscoveryServiceConfig", "name: d\nendpoint: /other\n"))).toBe(
      "apiVersion: v1alpha1\nkind: DiscoveryServiceConfig\nname: d\nendpoint: https://disc.example.com:3000/other?x=1\n",
    );
  });

  it("appends link addresses and keeps what the patch does not set", () => {
    const config = doc("LinkConfig", "name: eth0\nup: true\nmtu: 1500\naddresses:\n  - address: 10.0.0.2/24\n");
    expect(text(config, doc("LinkConfig", "name: eth0\nmtu: 9000\naddresses:\n  - address: 10.0.0.3/24\n"))).toBe(
      "apiVersion: v1alpha1\nkind: LinkConfig\nname: eth0\nup: true\nmtu: 9000\naddresses:\n    - address: 10.0.0.2/24\n    - address: 10.0.0.3/24\n",
    );
  });

  it("appends a device whose selector sets physical (Go compares selectors with pointers by address)", () => {
    const v = patched(base, 'machine:\n  network:\n    interfaces:\n      - deviceSelector: {hardwareAddr: "aa:bb:*", physical: true}\n        dhcp: true\n');
    expect((v.machine as any).network.interfaces).toHaveLength(3);
  });

  it("merges unstructured values (kubelet extraConfig) as Go maps of interface values, refusing a kind change", () => {
    const config = "version: v1alpha1\nmachine:\n  type: worker\n  kubelet:\n    extraConfig:\n      serverTLSBootstrap: true\n      maxPods: 110\n      featureGates: {A: true}\n      list: [a]\ncluster:\n  clusterName: c\n";
    const v = patched(config, 'machine:\n  kubelet:\n    extraConfig:\n      serverTLSBootstrap: false\n      maxPods: 0\n      featureGates: {B: false}\n      list: [b]\n      new: ""\n');
    expect((v.machine as any).kubelet.extraConfig).toEqual({
      serverTLSBootstrap: false, maxPods: 110, featureGates: { A: true, B: false }, list: ["a", "b"], new: "",
    });
    expect(errorOf(() => text(config, "machine:\n  kubelet:\n    extraConfig:\n      featureGates: [a]\n")).message).toBe(
      "machine.kubelet.extraConfig.featureGates: cannot merge a list from the patch into a map",
    );
  });
});

describe("JSON patches", () => {
  it("detects JSON and YAML lists of operations", () => {
    expect(parsePatch('[{"op": "add", "path": "/machine/certSANs/-", "value": "x"}]').type).toBe("jsonpatch");
    expect(parsePatch("- op: remove\n  path: /machine/kubelet\n").type).toBe("jsonpatch");
    expect(parsePatch("machine:\n  certSANs: [x]\n").type).toBe("strategic");
    expect(parsePatch("").type).toBe("strategic");
  });

  it("applies operations in order", () => {
    const v = patched(
      base,
      '[{"op": "add", "path": "/machine/certSANs/-", "value": "c.example.com"}, {"op": "remove", "path": "/machine/nodeLabels/zone"}, {"op": "replace", "path": "/machine/network/interfaces/1/mtu", "value": 1500}]',
    );
    const m = v.machine as any;
    expect(m.certSANs).toEqual(["a.example.com", "c.example.com"]);
    expect(m.nodeLabels).toEqual({ rack: "r1" });
    expect(m.network.interfaces[1].mtu).toBe(1500);
  });

  it("reports a failing operation", () => {
    const err = errorOf(() => applyPatches(base, [parsePatch("- op: replace\n  path: /machine/install/disk\n  value: /dev/sda\n")]));
    expect(err.message).toMatch(/^failure applying rfc6902 patches to talos machine config: replace \/machine\/install\/disk: /);
    expect(errorOf(() => parsePatch('[{"op": "frobnicate", "path": "/a"}]')).message).toBe('JSON patch operation 0: invalid "op" "frobnicate"');
  });

  it("refuses multi-document configs", () => {
    const config = `${base}---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: x\n`;
    expect(errorOf(() => applyPatches(config, [parsePatch("- op: remove\n  path: /machine/nodeLabels\n")])).message).toBe(
      "JSON6902 patches are not supported for multi-document machine configuration",
    );
  });
});

describe("patch arguments", () => {
  const files: Record<string, string> = { "p.yaml": "machine:\n  certSANs: [x]\n", plainname: "- op: remove\n  path: /a\n" };
  const readFile = (p: string) => {
    if (!(p in files)) throw new Error(`no such file ${p}`);
    return files[p];
  };

  it("reads @file, inline text, and bare file names", () => {
    expect(resolvePatchArg("@p.yaml", readFile)).toBe(files["p.yaml"]);
    expect(resolvePatchArg('[{"op":"remove","path":"/a"}]', readFile)).toBe('[{"op":"remove","path":"/a"}]');
    expect(resolvePatchArg("machine: {certSANs: [x]}", readFile)).toBe("machine: {certSANs: [x]}");
    expect(resolvePatchArg("plainname", readFile)).toBe(files.plainname);
  });

  it("joins consecutive JSON patches", () => {
    const ps = loadPatches(["plainname", '[{"op":"remove","path":"/b"}]', "@p.yaml"], readFile);
    expect(ps.map((p) => p.type)).toEqual(["jsonpatch", "strategic"]);
    expect(ps[0].type === "jsonpatch" && ps[0].ops.map((o) => o.path)).toEqual(["/a", "/b"]);
  });
});

describe.skipIf(!hasFixtures)("upstream patch fixtures", () => {
  const dir = `${FIXTURES}/patches/apply`;
  const read = (p: string) => fixture("patches", "apply", p);
  const semantic = (text: string) => normalize(loadConfig(text).v1alpha1());

  it("strategic1, jsonpatch1, jsonpatch2, strategic2, strategic3 give expected.yaml", () => {
    const patches = loadPatches(
      ["strategic1", "jsonpatch1", "jsonpatch2", "strategic2", "strategic3"].map((n) => `@${dir}/${n}.yaml`),
      (p) => fixture("patches", "apply", p.slice(dir.length + 1)),
    );
    const out = applyPatches(read("config.yaml"), patches);
    // Byte for byte, as upstream's apply_test.go compares.
    expect(out).toBe(read("expected.yaml"));
    expect(semantic(out)).toEqual(semantic(read("expected.yaml")));
    // The comparison must be able to fail: the unpatched config differs.
    expect(semantic(read("config.yaml"))).not.toEqual(semantic(read("expected.yaml")));
  });

  it("strategic4 gives expected_manifests.yaml: the manifest's leading blank line is gone from the patched text", () => {
    // The patch's `contents: |` block starts with an empty line; upstream's apply_test.go expects it trimmed.
    const raw = (text: string) => (parseYaml(text) as { cluster: { inlineManifests: { contents: string }[] } }).cluster.inlineManifests[0].contents;
    expect(raw(read("strategic4.yaml"))).toMatch(/^\n---\n/);
    const out = applyPatches(read("config.yaml"), [parsePatch(read("strategic4.yaml"))]);
    // Compared as text, not through the typed view (which trims on its own and would hide the difference).
    expect(raw(out)).toBe(raw(read("expected_manifests.yaml")));
    expect(out).toBe(read("expected_manifests.yaml"));
  });
});
