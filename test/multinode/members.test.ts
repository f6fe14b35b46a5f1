/**
 * Members through the Kubernetes discovery registry: a control plane and a worker, sandboxed on one lab bridge
 * (test/helpers/sandbox.ts), from one generated cluster with `cluster.discovery` on, the Kubernetes registry on
 * and the service registry (discovery.talos.dev, out of reach here) off. After one bootstrap each node's
 * kubelet registers its Node, each node writes its affiliate onto its own Node as annotations and reads the
 * other's, and then `get members` / `get affiliates` / `get identities` on either node list both, in upstream's
 * shapes; the worker's `discovery` control-plane endpoints hold the control plane's address. Kubernetes 1.32+ lets
 * a kubelet read only its own Node, so the config carries the RBAC grant operators add for this registry
 * (NODE_READER_PATCH; upstream's registry needs it just the same).
 *
 * Waits for two pieces built elsewhere (see SKIP_UNTIL): a worker's kubelet registering its Node (workers-join)
 * and the control-plane role label on the control plane's Node (node-apply), since upstream derives a remote
 * member's machine type from that label. With both merged in (tried on a throwaway merge, 2026-12-02) all three
 * cases pass in about 6.5 minutes.
 *
 * Needs root, dist/ (npm run build) and the images in the loopback registry; skips saying which is missing.
 */
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { parse } from "yaml";
import { applyPatches, parsePatch } from "../../src/machinery/config/patch/index.js";
import { generateConfigs, type GeneratedConfigs } from "../../src/machinery/generate/index.js";
import * as m from "../../src/machinery/api/gen/machine/machine_pb.js";
import { MachineService, ApplyConfigurationRequest_Mode as Mode } from "../../src/machinery/api/gen/machine/machine_pb.js";
import { DataSchema } from "../../src/machinery/api/gen/common/common_pb.js";
import { State } from "../../src/machinery/api/gen/cosi/state_pb.js";
import * as s from "../../src/machinery/api/gen/cosi/state_pb.js";
import { TestClient, insecureTls, mtls } from "../helpers/client.js";
import { talosconfigCreds, type Creds } from "../api/harness.js";
import { mirrorsPatch, sandboxSkipReason, startLab, startSandbox, type Lab, type SandboxNode, until, untarOne } from "../helpers/sandbox.js";

/**
 * What main still lacks for this test to pass; empty once both have landed. Until then the test is skipped with
 * this reason (it is written against upstream's behaviour, not loosened to today's).
 */
const SKIP_UNTIL: string[] = [];

const IMAGES = ["siderolabs/kubelet", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "coredns/coredns", "siderolabs/flannel", "pause"];
const skip = (await sandboxSkipReason({ images: IMAGES })) ?? (SKIP_UNTIL.length > 0 ? `waits for ${SKIP_UNTIL.join(" and ")}` : undefined);
if (skip) console.log(`skipping the members test: ${skip}`);

const MIN = 60_000;
const PREFIX = "10.214.92";
const CP = "mb-cp";
const WORKER = "mb-w";
const DISCOVERY = `cluster:
  discovery:
    enabled: true
    registries:
      kubernetes:
        disabled: false
      service:
        disabled: true
`;
/**
 * Kubernetes 1.32+ lets a kubelet's identity read only its own Node (AuthorizeNodeWithSelectors, GA in 1.34), so the
 * registry's pull is refused as upstream's is (siderolabs/talos#9980). The operator's workaround, applied here as an
 * inline manifest: let the group system:nodes read Nodes through RBAC.
 */
const NODE_READER_PATCH = `cluster:
  inlineManifests:
    - name: discovery-node-reader
      contents: |
        apiVersion: rbac.authorization.k8s.io/v1
        kind: ClusterRole
        metadata:
          name: talos:discovery:node-reader
        rules:
          - apiGroups: [""]
            resources: [nodes]
            verbs: [get, list, watch]
        ---
        apiVersion: rbac.authorization.k8s.io/v1
        kind: ClusterRoleBinding
        metadata:
          name: talos:discovery:node-reader
        roleRef:
          apiGroup: rbac.authorization.k8s.io
          kind: ClusterRole
          name: talos:discovery:node-reader
        subjects:
          - apiGroup: rbac.authorization.k8s.io
            kind: Group
            name: system:nodes
`;

interface Listed {
  id: string;
  yaml: string;
  spec: Record<string, unknown>;
}

describe.skipIf(!!skip)("members of a control plane and a worker through the Kubernetes registry", () => {
  let lab: Lab;
  let cp: SandboxNode, worker: SandboxNode;
  let cfgs: GeneratedConfigs;
  let creds: Creds;
  let core: k8s.CoreV1Api;
  const clients: TestClient[] = [];
  const client = (n: SandboxNode, tls = mtls(creds.ca, creds.crt, creds.key)) => {
    const c = new TestClient(`${n.ip}:50000`, tls);
    clients.push(c);
    return c;
  };
  /** A COSI List on one node, as `talosctl -n <node> get <type>` does. */
  const list = async (n: SandboxNode, namespace: string, type: string): Promise<Listed[]> => {
    const replies = await client(n).stream(State, "List", s.ListRequestSchema, s.ListResponseSchema, { namespace, type }, { deadlineMs: 20_000 });
    return replies
      .flatMap((r) => (r.resource ? [r.resource] : []))
      .map((r) => ({ id: r.metadata?.id ?? "", yaml: r.spec?.yamlSpec ?? "", spec: parse(r.spec?.yamlSpec ?? "{}") as Record<string, unknown> }))
      .sort((a, b) => (a.id < b.id ? -1 : 1));
  };
  const diagnostics = async () => {
    const out: string[] = [];
    for (const n of [cp, worker]) {
      for (const [ns, type] of [["cluster", "Members.cluster.talos.dev"], ["cluster-raw", "Affiliates.cluster.talos.dev"], ["cluster", "Affiliates.cluster.talos.dev"]]) {
        const got = await list(n, ns, type).catch((e) => [{ id: `error: ${(e as Error).message}`, yaml: "", spec: {} }]);
        out.push(`${n.name} ${ns}/${type}: ${got.map((x) => x.id).join(", ")}`);
      }
    }
    const nodes = await core?.listNode().catch(() => undefined);
    for (const n of nodes?.items ?? []) out.push(`node ${n.metadata?.name}: labels=${JSON.stringify(n.metadata?.labels)} annotations=${JSON.stringify(n.metadata?.annotations)}`);
    for (const n of [cp, worker]) {
      // The controllers log into machined's own log (`talosctl logs machined`).
      const logs = await client(n)
        .stream(MachineService, "Logs", m.LogsRequestSchema, DataSchema, { namespace: "system", id: "machined", tailLines: 2000 }, { deadlineMs: 20_000 })
        .catch(() => []);
      const text = Buffer.concat(logs.map((d) => d.bytes)).toString();
      out.push(`--- ${n.name} machined log\n${text.split("\n").filter((l) => /"controller":"cluster\./.test(l)).slice(-15).join("\n")}`);
    }
    return out.join("\n");
  };
  const explained = async <T>(p: Promise<T>): Promise<T> => {
    try {
      return await p;
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${await diagnostics()}`);
    }
  };

  beforeAll(async () => {
    lab = await startLab("members", PREFIX);
    [cp, worker] = await Promise.all([startSandbox(lab, CP, 2, { logLevel: "debug" }), startSandbox(lab, WORKER, 3, { logLevel: "debug" })]);
    cfgs = await generateConfigs({ clusterName: "members", endpoint: `https://${cp.ip}:6443`, talosVersion: "v1.13" });
    creds = talosconfigCreds(cfgs.talosconfig);
    const hostname = (name: string) => `machine:\n  network:\n    hostname: ${name}\n`;
    const docs: [SandboxNode, string][] = [
      [cp, applyPatches(cfgs.controlplane, [parsePatch(mirrorsPatch(lab.gateway)), parsePatch(hostname(CP)), parsePatch(DISCOVERY), parsePatch(NODE_READER_PATCH)])],
      [worker, applyPatches(cfgs.worker, [parsePatch(mirrorsPatch(lab.gateway)), parsePatch(hostname(WORKER)), parsePatch(DISCOVERY)])],
    ];
    for (const [n, cfg] of docs) {
      await client(n, insecureTls()).unary(
        MachineService,
        "ApplyConfiguration",
        m.ApplyConfigurationRequestSchema,
        m.ApplyConfigurationResponseSchema,
        { data: new TextEncoder().encode(cfg), mode: Mode.AUTO },
        { deadlineMs: 2 * MIN },
      );
    }
    await until("the control plane's API with the cluster's credentials", 2 * MIN, () =>
      client(cp).unary(MachineService, "Version", EmptySchema, m.VersionResponseSchema, {}, { deadlineMs: 10_000 }),
    );
    await until("etcd ready for bootstrap", 3 * MIN, () =>
      client(cp).unary(MachineService, "Bootstrap", m.BootstrapRequestSchema, m.BootstrapResponseSchema, {}, { deadlineMs: 20_000 }),
    );
    const chunks = await until("a kubeconfig", 2 * MIN, async () =>
      (await client(cp).stream(MachineService, "Kubeconfig", EmptySchema, DataSchema, {}, { deadlineMs: 20_000 })).map((x) => x.bytes),
    );
    const kc = new k8s.KubeConfig();
    kc.loadFromString(untarOne(Buffer.concat(chunks), "kubeconfig"));
    core = kc.makeApiClient(k8s.CoreV1Api);
  }, 10 * MIN);

  afterAll(async () => {
    for (const c of clients) c.close();
    await Promise.all([cp?.stop(), worker?.stop()]);
    await lab?.stop();
  }, 4 * MIN);

  it("each node's identity is on its Node object, in upstream's annotation", async () => {
    await explained(
      until("both Nodes annotated with their node ids", 10 * MIN, async () => {
        for (const n of [cp, worker]) {
          const [identity] = await list(n, "cluster", "Identities.cluster.talos.dev");
          expect(identity?.id).toBe("local");
          expect(identity.spec.nodeId).toMatch(/^[0-9A-Za-z]{40,44}$/);
          const node = await core.readNode({ name: n.name });
          expect(node.metadata?.annotations?.["cluster.talos.dev/node-id"]).toBe(identity.spec.nodeId);
          expect(node.metadata?.annotations?.["networking.talos.dev/self-ips"]).toBe(n.ip);
        }
        const cpNode = await core.readNode({ name: CP });
        expect(cpNode.metadata?.annotations?.["networking.talos.dev/api-server-port"]).toBe("6443");
        expect((await core.readNode({ name: WORKER })).metadata?.annotations?.["networking.talos.dev/api-server-port"]).toBeUndefined();
      }),
    );
  }, 12 * MIN);

  it("both nodes list both as members, and both as affiliates (one local, one from the Kubernetes registry)", async () => {
    const ids = new Map<string, string>();
    for (const n of [cp, worker]) ids.set(n.name, String((await list(n, "cluster", "Identities.cluster.talos.dev"))[0].spec.nodeId));
    for (const n of [cp, worker]) {
      const other = n === cp ? worker : cp;
      const members = await explained(
        until(`${n.name} to list both members`, 3 * MIN, async () => {
          const got = await list(n, "cluster", "Members.cluster.talos.dev");
          expect(got.map((x) => x.id)).toEqual([CP, WORKER]);
          return got;
        }),
      );
      const byId = Object.fromEntries(members.map((x) => [x.id, x]));
      expect(byId[CP].spec).toMatchObject({ nodeId: ids.get(CP), addresses: [cp.ip], hostname: CP, machineType: "controlplane", controlPlane: { port: 6443 } });
      expect(byId[WORKER].spec).toMatchObject({ nodeId: ids.get(WORKER), addresses: [worker.ip], hostname: WORKER, machineType: "worker" });
      expect(byId[WORKER].spec).not.toHaveProperty("controlPlane");
      // The local member's OS is this build's; the remote one's is what its kubelet reports as the Node's osImage.
      expect(byId[n.name].spec.operatingSystem).toMatch(/^Talos \(v\d+\.\d+\.\d+/);
      expect(Object.keys(byId[n.name].spec)).toEqual(["nodeId", "addresses", "hostname", "machineType", "operatingSystem", ...(n === cp ? ["controlPlane"] : [])]);

      const affiliates = await list(n, "cluster", "Affiliates.cluster.talos.dev");
      expect(affiliates.map((x) => x.id).sort()).toEqual([ids.get(CP), ids.get(WORKER)].sort());
      // Upstream's YAML: KubeSpan off leaves `kubespan` out.
      for (const a of affiliates) expect(a.yaml).not.toContain("kubespan");
      const raw = await list(n, "cluster-raw", "Affiliates.cluster.talos.dev");
      expect(raw.map((x) => x.id)).toEqual([`k8s/${ids.get(other.name)}`]);
      expect(raw[0].spec).toMatchObject({ nodeId: ids.get(other.name), nodename: other.name, addresses: [other.ip] });
    }
  }, 8 * MIN);

  it("the control plane found through discovery is among the worker's control-plane endpoints", async () => {
    const [endpoint] = (await list(worker, "controlplane", "Endpoints.kubernetes.talos.dev")).filter((x) => x.id === "discovery");
    expect(endpoint?.spec).toEqual({ addresses: [cp.ip], hosts: [] });
    // The service registry is configured off here, and DiscoveryConfig says so.
    const [cfg] = await list(worker, "config", "DiscoveryConfigs.cluster.talos.dev");
    expect(cfg.spec).toMatchObject({ discoveryEnabled: true, registryKubernetesEnabled: true, registryServiceEnabled: false, serviceEndpoints: [] });
  }, 2 * MIN);
});
