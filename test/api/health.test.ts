/** Server-side health check: the polling engine (fake clock), each check against a store, the handler, and inspect. */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { HealthCheckRequestSchema } from "../../src/machinery/api/gen/cluster/cluster_pb.js";
import { DependencyEdgeType } from "../../src/machinery/api/gen/inspect/inspect_pb.js";
import { ApiError, Code } from "../../src/machinery/errors.js";
import { newResource } from "../../src/machinery/resources/resource.js";
import { VolumeStatusType } from "../../src/machinery/resources/types/block.js";
import { MemberType } from "../../src/machinery/resources/types/cluster.js";
import { loadConfig } from "../../src/machinery/config/index.js";
import { CONFIG_NS, MachineConfigType, MachineTypeType, type MachineTypeName } from "../../src/machinery/resources/types/config.js";
import { EtcdMemberType } from "../../src/machinery/resources/types/etcd.js";
import { KubeletConfigType } from "../../src/machinery/resources/types/k8s.js";
import { MachineStatusType, RUNTIME_NS, ServiceType } from "../../src/machinery/resources/types/runtime.js";
import { DiagnosticType } from "../../src/machinery/resources/types/security.js";
import { InMemoryState } from "../../src/state/inmem.js";
import { ControllerRuntime } from "../../src/state/runtime/index.js";
import { defaultClusterChecks, iBytes, K8S_CHECK_NAMES, MIN_EPHEMERAL_BYTES, type CheckEnv, type NodeReads } from "../../src/lifecycle/health/checks.js";
import { localNodeReads, NodeReadError, unreachableNodeReads, type LocalReadsOptions } from "../../src/lifecycle/health/reads.js";
import { NO_KUBERNETES } from "../../src/lifecycle/health/kubernetes.js";
import type { KubeApiFactory, KubeApiOptions } from "../../src/host/kube/api.js";
import { MemoryKubeApi } from "../../src/host/kube/memory.js";
import { NODES, PODS } from "../../src/machinery/kubernetes/objects.js";
import { KubernetesCertsType, SECRETS_NS } from "../../src/machinery/resources/types/secrets.js";
import { k8sNode, kubernetesNodeState, pod } from "../lifecycle/health/fixture.js";
import { clusterInfoFromLists, clusterInfoFromMembers } from "../../src/lifecycle/health/nodes.js";
import { dedupReporter, SkipCheck, waitChecks, type ClusterCheck } from "../../src/lifecycle/health/wait.js";
import type { ApiDeps } from "../../src/api/deps.js";
import { healthHandlers, NO_CLIENT_CERTIFICATE, type HealthOptions } from "../../src/api/handlers/health.js";
import { BackendPool } from "../../src/api/forward/pool.js";
import { StatusError } from "../../src/api/forward/backend.js";
import * as grpc from "@grpc/grpc-js";
import { inspectHandlers } from "../../src/api/handlers/inspect.js";
import type { CallContext } from "../../src/api/transport/context.js";

const GiB = 1024 ** 3;
const LOCAL = "10.5.0.2";

/** A fake clock whose sleep advances time instantly. */
function fakeClock(start = 0) {
  const c = { t: start, now: () => c.t, sleep: async (ms: number) => void (c.t += ms) };
  return c;
}

function put(s: InMemoryState, ns: string, type: string, id: string, spec: unknown) {
  s.apply(newResource({ namespace: ns, type, id }, spec), "");
}

const CONFIG = `version: v1alpha1
machine:
  type: controlplane
cluster:
  clusterName: demo
  etcd:
    ca:
      crt: Zm9vYmFy
      key: Zm9vYmFy
`;

/** A one-node cluster: the local control plane with its three control plane pods. */
function oneNodeCluster(): MemoryKubeApi {
  const api = new MemoryKubeApi();
  api.put(NODES, k8sNode("cp-1", LOCAL, { controlPlane: true }));
  for (const app of ["kube-apiserver", "kube-controller-manager", "kube-scheduler"]) api.put(PODS, pod(`${app}-cp-1`, app));
  return api;
}

/** A store where every check passes for the local control plane node (with oneNodeCluster as its Kubernetes). */
function healthyState(): InMemoryState {
  const s = new InMemoryState();
  put(s, CONFIG_NS, MachineConfigType.type, "v1alpha1", loadConfig(CONFIG));
  put(s, CONFIG_NS, MachineTypeType.type, "machine-type", "controlplane");
  put(s, RUNTIME_NS, ServiceType.type, "etcd", { running: true, healthy: true, unknown: false });
  put(s, RUNTIME_NS, ServiceType.type, "kubelet", { running: true, healthy: true, unknown: false });
  put(s, "k8s", KubeletConfigType.type, "kubelet", { image: "kubelet" });
  put(s, "etcd", EtcdMemberType.type, "local", { memberID: "0000000000000001" });
  put(s, RUNTIME_NS, VolumeStatusType.type, "EPHEMERAL", { phase: "ready", type: "directory", location: "/state", size: 100 * GiB });
  put(s, RUNTIME_NS, MachineStatusType.type, "machine", { stage: "running", status: { ready: true, unmetConditions: [] } });
  kubernetesNodeState(s);
  put(s, SECRETS_NS, KubernetesCertsType.type, "k8s-certs", { adminKubeconfig: "ADMIN", localhostAdminKubeconfig: "", schedulerKubeconfig: "", controllerManagerKubeconfig: "" });
  return s;
}

interface EnvOptions extends Partial<Omit<LocalReadsOptions, "state" | "platformMode">> {
  containerMode?: boolean;
  /** Other nodes' reads by address; any other address cannot be asked. */
  remote?: Record<string, NodeReads>;
}

function env(s: InMemoryState, over: Partial<CheckEnv> & EnvOptions = {}): CheckEnv {
  const api = oneNodeCluster();
  const { containerMode, memTotalKiB, etcdMembers, remote, ...rest } = over;
  const local = localNodeReads({ state: s, platformMode: containerMode ? "container" : "metal", memTotalKiB: memTotalKiB ?? (async () => 8 * 1024 * 1024), etcdMembers });
  return {
    state: s,
    cluster: clusterInfoFromLists([LOCAL], []),
    isLocal: (ip) => ip === LOCAL,
    node: (ip) => (ip === LOCAL ? local : (remote?.[ip] ?? unreachableNodeReads(ip, "not asked in this test"))),
    kubernetes: async () => api,
    ...rest,
  };
}

const check = (e: CheckEnv, name: string) => defaultClusterChecks(e).find((c) => c.name === name)!;
const run = (c: ClusterCheck) => c.run(new AbortController().signal);

describe("waitChecks", () => {
  it("reports pending, retries with the last error (deduplicated), then OK or SKIP", async () => {
    const clock = fakeClock();
    let attempts = 0;
    const lines: string[] = [];
    const checks: ClusterCheck[] = [
      {
        name: "a",
        run: async () => {
          if (++attempts < 4) throw new Error("not yet");
        },
      },
      { name: "b", run: async () => Promise.reject(new SkipCheck()) },
      { name: "c", run: async () => Promise.reject(new SkipCheck("no API")) },
    ];
    await waitChecks(checks, dedupReporter((l) => void lines.push(l)), { deadline: 60_000, intervalMs: 5_000, ...clock });
    expect(lines).toEqual([
      "waiting for a: ...",
      "waiting for a: not yet",
      "waiting for a: OK",
      "waiting for b: ...",
      "waiting for b: SKIP",
      "waiting for c: ...",
      "waiting for c: SKIP (no API)",
    ]);
    expect(attempts).toBe(4);
    expect(clock.t).toBe(15_000);
  });

  it("ends with DeadlineExceeded naming the check and its last error", async () => {
    const clock = fakeClock();
    const lines: string[] = [];
    const never: ClusterCheck = { name: "etcd to be healthy", run: async () => Promise.reject(new Error("etcd is sad")) };
    const err = await waitChecks([never], dedupReporter((l) => void lines.push(l)), { deadline: 12_000, intervalMs: 5_000, ...clock }).catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err.code).toBe(Code.DeadlineExceeded);
    expect(err.message).toBe("context deadline exceeded: waiting for etcd to be healthy: etcd is sad");
    expect(lines).toEqual(["waiting for etcd to be healthy: ...", "waiting for etcd to be healthy: etcd is sad"]);
    expect(clock.t).toBe(12_000);
  });
});

describe("cluster checks on this node's state", () => {
  const PRE_K8S = [
    "etcd to be healthy",
    "etcd members to be consistent across nodes",
    "etcd members to be control plane nodes",
    "apid to be ready",
    "all nodes memory sizes",
    "all nodes disk sizes",
    "no diagnostics",
    "kubelet to be healthy",
    "all nodes to finish boot sequence",
  ];

  it("a healthy control plane passes every check, the Kubernetes ones included (no kube-proxy or CoreDNS: skipped as upstream)", async () => {
    const lines: string[] = [];
    await waitChecks(defaultClusterChecks(env(healthyState())), dedupReporter((l) => void lines.push(l)), { deadline: 1000, ...fakeClock() });
    const finals = lines.filter((l) => !l.endsWith(": ..."));
    expect(finals).toEqual([
      ...PRE_K8S.map((n) => `waiting for ${n}: OK`),
      ...K8S_CHECK_NAMES.map((n) => `waiting for ${n}: ${n === "kube-proxy to report ready" || n === "coredns to report ready" ? "SKIP" : "OK"}`),
    ]);
  });

  it("a node that runs no kubelet skips the kubelet and Kubernetes checks", async () => {
    const s = healthyState();
    s.destroy({ namespace: "k8s", type: KubeletConfigType.type, id: "kubelet" }, "");
    const lines: string[] = [];
    await waitChecks(defaultClusterChecks(env(s)), dedupReporter((l) => void lines.push(l)), { deadline: 1000, ...fakeClock() });
    expect(lines.filter((l) => !l.endsWith(": ...")).slice(7)).toEqual([
      "waiting for kubelet to be healthy: SKIP",
      "waiting for all nodes to finish boot sequence: OK",
      ...K8S_CHECK_NAMES.map((n) => `waiting for ${n}: SKIP (${NO_KUBERNETES})`),
    ]);
  });

  it("etcd and kubelet checks skip when etcd has no CA / there is no KubeletConfig, and fail when unhealthy", async () => {
    const s = healthyState();
    put(s, RUNTIME_NS, ServiceType.type, "etcd", { running: true, healthy: false, unknown: false });
    await expect(run(check(env(s), "etcd to be healthy"))).rejects.toThrow("1 error occurred:\n\t* 10.5.0.2: service is not healthy: etcd");
    s.destroy({ namespace: RUNTIME_NS, type: ServiceType.type, id: "etcd" }, "");
    await expect(run(check(env(s), "etcd to be healthy"))).rejects.toThrow('10.5.0.2: service "etcd" not in expected state "Running"');
    s.destroy({ namespace: "etcd", type: EtcdMemberType.type, id: "local" }, "");
    await expect(run(check(env(s), "etcd members to be consistent across nodes"))).rejects.toThrow('error getting etcd member list from node "10.5.0.2"');
    await expect(run(check(env(s, { etcdRuns: () => false }), "etcd to be healthy"))).rejects.toBeInstanceOf(SkipCheck);
    put(s, CONFIG_NS, MachineConfigType.type, "v1alpha1", loadConfig("version: v1alpha1\nmachine:\n  type: controlplane\ncluster:\n  clusterName: demo\n"));
    await expect(run(check(env(s), "etcd to be healthy"))).rejects.toBeInstanceOf(SkipCheck);

    s.destroy({ namespace: "k8s", type: KubeletConfigType.type, id: "kubelet" }, "");
    await expect(run(check(env(s), "kubelet to be healthy"))).rejects.toBeInstanceOf(SkipCheck);
  });

  it("etcd members must be control plane nodes (peer URLs from the etcd client)", async () => {
    const s = healthyState();
    const members = (url: string) => async () => [{ id: "1", hostname: "n1", peerUrls: [url], isLearner: false }];
    await expect(run(check(env(s, { etcdMembers: members("https://10.5.0.2:2380") }), "etcd members to be control plane nodes"))).resolves.toBeUndefined();
    await expect(run(check(env(s, { etcdMembers: members("https://10.9.9.9:2380") }), "etcd members to be control plane nodes"))).rejects.toThrow(
      'etcd member ips ["10.9.9.9"] are not subset of control plane node ips ["10.5.0.2"]',
    );
  });

  it("memory and disk sizes: upstream minimums, skipped in container mode", async () => {
    const s = healthyState();
    const small = env(s, { memTotalKiB: async () => 1024 * 1024 });
    await expect(run(check(small, "all nodes memory sizes"))).rejects.toThrow(
      'node "10.5.0.2" does not meet memory requirements: expected at least 1698 MiB, actual 1024 MiB',
    );
    await expect(run(check(env(s, { memTotalKiB: async () => 1024 * 1024, containerMode: true }), "all nodes memory sizes"))).resolves.toBeUndefined();
    put(s, RUNTIME_NS, VolumeStatusType.type, "EPHEMERAL", { phase: "ready", type: "directory", location: "/state", size: 2 * GiB });
    expect(iBytes(MIN_EPHEMERAL_BYTES)).toBe("3.8 GiB");
    await expect(run(check(env(s), "all nodes disk sizes"))).rejects.toThrow(
      'ephemeral partition "/state" for node "10.5.0.2" is too small, expected at least 3.8 GiB, actual 2.0 GiB',
    );
    s.destroy({ namespace: RUNTIME_NS, type: VolumeStatusType.type, id: "EPHEMERAL" }, "");
    await expect(run(check(env(s), "all nodes disk sizes"))).rejects.toThrow("VolumeStatuses.block.talos.dev(runtime/EPHEMERAL@undefined) doesn't exist");
  });

  it("diagnostics, boot sequence, and unreachable nodes", async () => {
    const s = healthyState();
    put(s, RUNTIME_NS, DiagnosticType.type, "address-overlap", { message: "host and Kubernetes pod/service CIDR addresses overlap", details: [] });
    await expect(run(check(env(s), "no diagnostics"))).rejects.toThrow("active diagnostics: 10.5.0.2: host and Kubernetes pod/service CIDR addresses overlap");
    put(s, RUNTIME_NS, MachineStatusType.type, "machine", { stage: "booting", status: { ready: false, unmetConditions: [] } });
    await expect(run(check(env(s), "all nodes to finish boot sequence"))).rejects.toThrow("nodes are not running: booting: [10.5.0.2]");

    const two = env(s, { cluster: clusterInfoFromLists([LOCAL], ["10.5.0.3"]) });
    await expect(run(check(two, "apid to be ready"))).rejects.toThrow('error getting version from node "10.5.0.3": node "10.5.0.3" is not reachable');
  });

  it("builds the node list from Members (first address, by machine type) and rejects bad IPs", () => {
    const m = (id: string, addresses: string[], machineType: MachineTypeName) =>
      newResource({ namespace: "cluster", type: MemberType.type, id }, { nodeId: id, addresses, hostname: id, machineType, operatingSystem: "Talos" });
    const info = clusterInfoFromMembers([m("w", ["10.5.0.3"], "worker"), m("cp", ["10.5.0.2", "fd00::2"], "controlplane")]);
    expect(info.nodes.map((n) => n.internalIP)).toEqual(["10.5.0.2", "10.5.0.3"]);
    expect(info.byType.controlplane[0].ips).toEqual(["10.5.0.2", "fd00::2"]);
    expect(() => clusterInfoFromMembers([m("x", [], "worker")])).toThrow("no IP address found for member: x");
    expect(() => clusterInfoFromLists(["not-an-ip"], [])).toThrow(/unable to parse IP/);
  });
});

const CP2 = "10.5.0.4";
const W = "10.5.0.3";
const rpc = (code: Code, details: string) => new NodeReadError(code, `rpc error: code = ${Code[code]} desc = ${details}`);
const REFUSED = rpc(Code.Unavailable, 'connection error: desc = "transport: Error while dialing: dial tcp 10.5.0.4:50000: connect: connection refused"');

/** Another node's reads, healthy unless told otherwise (the etcd members are the local etcd's view). */
function fakeReads(over: Partial<NodeReads> = {}): NodeReads {
  return {
    platformMode: async () => "metal",
    service: async () => ({ running: true, healthy: true }),
    etcdMembers: async () => [],
    memTotalKiB: async () => 4 * 1024 * 1024,
    ephemeral: async () => ({ size: 100 * GiB, location: "/dev/vda6" }),
    diagnostics: async () => [],
    stage: async () => "running",
    staticPodIds: async () => ["kube-system/kube-apiserver-cp-2", "kube-system/kube-controller-manager-cp-2", "kube-system/kube-scheduler-cp-2"],
    ...over,
  };
}

describe("cluster checks with other nodes' reads", () => {
  const members = [
    { id: "0000000000000001", hostname: "cp-1", peerUrls: ["https://10.5.0.2:2380"], isLearner: false },
    { id: "0000000000000002", hostname: "cp-2", peerUrls: ["https://10.5.0.4:2380"], isLearner: false },
  ];
  /** This control plane, a second one and a worker, each remote node's reads overridable. */
  const cluster3 = (cp2: Partial<NodeReads> = {}, worker: Partial<NodeReads> = {}) =>
    env(healthyState(), {
      cluster: clusterInfoFromLists([LOCAL, CP2], [W]),
      etcdMembers: async () => members,
      remote: { [CP2]: fakeReads({ etcdMembers: async () => members, ...cp2 }), [W]: fakeReads(worker) },
    });

  it("a healthy cluster passes every pre-boot check, each remote node asked", async () => {
    const asked: string[] = [];
    const spy = (node: string, r: NodeReads): NodeReads =>
      Object.fromEntries(Object.entries(r).map(([k, f]) => [k, (...a: unknown[]) => (asked.push(`${node} ${k}`), (f as (...x: unknown[]) => unknown)(...a))])) as unknown as NodeReads;
    const e = cluster3();
    const node = e.node;
    e.node = (ip) => (ip === LOCAL ? node(ip) : spy(ip, node(ip)));
    for (const c of defaultClusterChecks(e).slice(0, 9)) await expect(run(c), c.name).resolves.toBeUndefined();
    // Static pods are read from every control plane.
    await expect(run(check(e, "all control plane static pods to be running"))).resolves.toBeUndefined();
    for (const want of ["service", "etcdMembers", "platformMode", "memTotalKiB", "ephemeral", "diagnostics", "stage", "staticPodIds"]) expect(asked).toContain(`${CP2} ${want}`);
    // The worker runs no etcd and no control plane: only its node-wide reads.
    expect(new Set(asked.filter((a) => a.startsWith(W)).map((a) => a.split(" ")[1]))).toEqual(new Set(["platformMode", "memTotalKiB", "ephemeral", "diagnostics", "stage"]));
  });

  it("service health: a remote node's failure names the node and the status; unhealthy ones are listed by node", async () => {
    await expect(run(check(cluster3({ service: async () => Promise.reject(REFUSED) }), "etcd to be healthy"))).rejects.toThrow(
      `error getting service info for service "etcd" from node "10.5.0.4": ${REFUSED.message}`,
    );
    await expect(run(check(cluster3({ service: async () => ({ running: true, healthy: false }) }), "kubelet to be healthy"))).rejects.toThrow(
      "1 error occurred:\n\t* 10.5.0.4: service is not healthy: kubelet\n\n",
    );
    await expect(run(check(cluster3({ service: async () => undefined }), "etcd to be healthy"))).rejects.toThrow(
      '10.5.0.4: service "etcd" not in expected state "Running"',
    );
  });

  it("etcd members: every control plane's list must match; the member list of an unreachable node names it", async () => {
    await expect(run(check(cluster3({ etcdMembers: async () => [members[0]] }), "etcd members to be consistent across nodes"))).rejects.toThrow(
      "10.5.0.4: expected to have [cp-1 cp-2] members, got [cp-1]",
    );
    const stranger = { ...members[1], id: "00000000000000ff" };
    await expect(run(check(cluster3({ etcdMembers: async () => [members[0], stranger] }), "etcd members to be consistent across nodes"))).rejects.toThrow(
      "10.5.0.4: found unexpected etcd member cp-2",
    );
    await expect(run(check(cluster3({ etcdMembers: async () => Promise.reject(REFUSED) }), "etcd members to be consistent across nodes"))).rejects.toThrow(
      `error getting etcd member list from node "10.5.0.4": ${REFUSED.message}`,
    );
  });

  it("apid, memory and disk: every failing node named, container nodes not sized, too old nodes skip the disk check", async () => {
    const down = cluster3({ platformMode: async () => Promise.reject(REFUSED) }, { platformMode: async () => Promise.reject(rpc(Code.DeadlineExceeded, "context deadline exceeded")) });
    const apid = run(check(down, "apid to be ready"));
    await expect(apid).rejects.toThrow(
      `error getting version from node "10.5.0.4": ${REFUSED.message}\nerror getting version from node "10.5.0.3": rpc error: code = DeadlineExceeded desc = context deadline exceeded`,
    );
    await expect(run(check(down, "all nodes memory sizes"))).rejects.toThrow('error getting version from node "10.5.0.4"');

    const small = cluster3({ memTotalKiB: async () => 1024 * 1024 }, { memTotalKiB: async () => 512 * 1024 });
    await expect(run(check(small, "all nodes memory sizes"))).rejects.toThrow(
      '2 errors occurred:\n\t* node "10.5.0.4" does not meet memory requirements: expected at least 1698 MiB, actual 1024 MiB\n\t* node "10.5.0.3" does not meet memory requirements: expected at least 874 MiB, actual 512 MiB',
    );
    const containers = cluster3({ platformMode: async () => "container", memTotalKiB: async () => 1 }, { platformMode: async () => "container", memTotalKiB: async () => 1 });
    await expect(run(check(containers, "all nodes memory sizes"))).resolves.toBeUndefined();
    await expect(run(check(cluster3({ memTotalKiB: async () => Promise.reject(REFUSED) }), "all nodes memory sizes"))).rejects.toThrow(
      `error getting memory info for node "10.5.0.4": ${REFUSED.message}`,
    );

    await expect(run(check(cluster3({}, { ephemeral: async () => ({ size: GiB, location: "/dev/vdb6" }) }), "all nodes disk sizes"))).rejects.toThrow(
      'ephemeral partition "/dev/vdb6" for node "10.5.0.3" is too small, expected at least 3.8 GiB, actual 1.0 GiB',
    );
    const gone = rpc(Code.NotFound, "resource VolumeStatuses.block.talos.dev(runtime/EPHEMERAL@undefined) doesn't exist");
    await expect(run(check(cluster3({ ephemeral: async () => Promise.reject(gone) }), "all nodes disk sizes"))).rejects.toThrow(
      `error getting volume status for node "10.5.0.4": ${gone.message}`,
    );
    const old = rpc(Code.PermissionDenied, "not authorized");
    await expect(run(check(cluster3({}, { ephemeral: async () => Promise.reject(old) }), "all nodes disk sizes"))).rejects.toBeInstanceOf(SkipCheck);
  });

  it("diagnostics and boot stages of every node, sorted by node", async () => {
    const e = cluster3({ diagnostics: async () => ["kubelet is not healthy", "etcd is slow"] }, { diagnostics: async () => ["address overlap"] });
    await expect(run(check(e, "no diagnostics"))).rejects.toThrow("active diagnostics: 10.5.0.3: address overlap; 10.5.0.4: kubelet is not healthy, etcd is slow");
    await expect(run(check(cluster3({}, { diagnostics: async () => Promise.reject(REFUSED) }), "no diagnostics"))).rejects.toThrow(
      `error listing diagnostics on node "10.5.0.3": ${REFUSED.message}`,
    );
    await expect(run(check(cluster3({}, { diagnostics: async () => Promise.reject(rpc(Code.PermissionDenied, "x")) }), "no diagnostics"))).rejects.toBeInstanceOf(SkipCheck);

    await expect(run(check(cluster3({ stage: async () => "booting" }, { stage: async () => "unknown" }), "all nodes to finish boot sequence"))).rejects.toThrow(
      "nodes are not running: unknown: [10.5.0.3], booting: [10.5.0.4]",
    );
    await expect(run(check(cluster3({}, { stage: async () => Promise.reject(REFUSED) }), "all nodes to finish boot sequence"))).rejects.toThrow(
      `error watching machine 10.5.0.3 status: ${REFUSED.message}`,
    );
  });

  it("static pods of a remote control plane: the missing ones, or the failure, name the node", async () => {
    await expect(run(check(cluster3({ staticPodIds: async () => ["kube-system/kube-apiserver-cp-2"] }), "all control plane static pods to be running"))).rejects.toThrow(
      "missing static pods on node 10.5.0.4: [kube-system/kube-controller-manager kube-system/kube-scheduler]",
    );
    await expect(run(check(cluster3({ staticPodIds: async () => Promise.reject(REFUSED) }), "all control plane static pods to be running"))).rejects.toThrow(
      `error listing static pods on node 10.5.0.4: ${REFUSED.message}`,
    );
  });

  it("a read still pending at the attempt's deadline fails the attempt with its own error, naming the node", async () => {
    const hanging: Partial<NodeReads> = {
      platformMode: (signal) =>
        new Promise((_, reject) => signal?.addEventListener("abort", () => reject(rpc(Code.DeadlineExceeded, "context deadline exceeded")), { once: true })),
    };
    const apid = check(cluster3({}, hanging), "apid to be ready");
    const lines: string[] = [];
    const err = await waitChecks([apid], dedupReporter((l) => void lines.push(l)), { deadline: 100, intervalMs: 50, ...fakeClock() }).catch((e: unknown) => e);
    const named = 'error getting version from node "10.5.0.3": rpc error: code = DeadlineExceeded desc = context deadline exceeded';
    expect((err as ApiError).message).toBe(`context deadline exceeded: waiting for apid to be ready: ${named}`);
    expect(lines).toEqual(["waiting for apid to be ready: ...", `waiting for apid to be ready: ${named}`]);
    // A check that ignores the abort fails with the bare deadline.
    const deaf = check(cluster3({}, { platformMode: () => new Promise(() => {}) }), "apid to be ready");
    const bare = await waitChecks([deaf], () => {}, { deadline: 50, intervalMs: 50, ...fakeClock() }).catch((e: unknown) => e);
    expect((bare as ApiError).message).toBe("context deadline exceeded: waiting for apid to be ready: context deadline exceeded");
  });
});

function deps(s: InMemoryState, mode = "metal"): ApiDeps {
  return { state: s, localNames: () => [LOCAL, "127.0.0.1"], platform: { name: "metal", mode } } as unknown as ApiDeps;
}
const ctx = { signal: new AbortController().signal, roles: new Set(["os:operator"]) } as unknown as CallContext;

/** A client factory over one in-memory cluster that records how it was called and whether the client was closed. */
function recordingFactory(api: MemoryKubeApi = oneNodeCluster()) {
  const calls: { kubeconfig: string; opts?: KubeApiOptions }[] = [];
  const factory: KubeApiFactory = (kubeconfig, opts) => {
    calls.push({ kubeconfig, opts });
    return api;
  };
  return { api, calls, factory };
}

async function callHealth(
  s: InMemoryState,
  req: Parameters<typeof create<typeof HealthCheckRequestSchema>>[1],
  clock = fakeClock(),
  k8s = recordingFactory(),
  extra: HealthOptions = {},
) {
  const msgs: string[] = [];
  const h = healthHandlers(deps(s), { ...clock, memTotalKiB: async () => 8 * 1024 * 1024, kubeApi: k8s.factory, ...extra });
  const result = await h
    .HealthCheck(create(HealthCheckRequestSchema, req), async (m: { message: string }) => void msgs.push(m.message), ctx)
    .then(() => undefined, (e: unknown) => e);
  return { msgs, error: result as ApiError | undefined };
}

describe("ClusterService.HealthCheck handler", () => {
  it("refuses nodes that are not control planes, like machined", async () => {
    const s = new InMemoryState();
    expect((await callHealth(s, {})).error?.message).toBe("machine type is not set, cannot use cluster health check API");
    put(s, CONFIG_NS, MachineTypeType.type, "machine-type", "worker");
    const { error } = await callHealth(s, {});
    expect(error?.code).toBe(Code.Unimplemented);
    expect(error?.message).toBe("cluster health check is only available on control plane nodes");
  });

  it("discovers the nodes from Members, streams the progress and ends OK when healthy", async () => {
    const s = healthyState();
    put(s, "cluster", MemberType.type, "n1", { nodeId: "x", addresses: [LOCAL], hostname: "n1", machineType: "controlplane", operatingSystem: "Talos (v1.14.0)" });
    const k8s = recordingFactory();
    const { msgs, error } = await callHealth(s, { waitTimeout: { seconds: 60n, nanos: 0 } }, fakeClock(), k8s);
    expect(error).toBeUndefined();
    expect(msgs[0]).toBe('discovered nodes: ["10.5.0.2"]');
    expect(msgs[1]).toBe("waiting for etcd to be healthy: ...");
    expect(msgs).toContain("waiting for all nodes to finish boot sequence: OK");
    expect(msgs).toContain("waiting for all control plane components to be ready: OK");
    expect(msgs.at(-1)).toBe("waiting for all k8s nodes to report schedulable: OK");
    expect(new Set(msgs).size).toBe(msgs.length);
    // One client per run, from the admin kubeconfig, closed at the end.
    expect(k8s.calls).toEqual([{ kubeconfig: "ADMIN", opts: { forceEndpoint: undefined } }]);
    expect(k8s.api.closed).toBe(true);
  });

  it("falls back to the Kubernetes Nodes without Members, and passes a forced endpoint to the client", async () => {
    const s = healthyState();
    const k8s = recordingFactory();
    const { msgs, error } = await callHealth(s, { waitTimeout: { seconds: 60n, nanos: 0 }, clusterInfo: { forceEndpoint: "10.9.9.9:6443" } }, fakeClock(), k8s);
    expect(error).toBeUndefined();
    expect(msgs[0]).toBe('discovered nodes: ["10.5.0.2"]');
    expect(k8s.calls).toEqual([{ kubeconfig: "ADMIN", opts: { forceEndpoint: "10.9.9.9:6443" } }]);
  });

  it("names the missing admin kubeconfig and the component that is down", async () => {
    const s = healthyState();
    s.destroy({ namespace: SECRETS_NS, type: KubernetesCertsType.type, id: "k8s-certs" }, "");
    const noKubeconfig = await callHealth(s, { waitTimeout: { seconds: 30n, nanos: 0 }, clusterInfo: { controlPlaneNodes: [LOCAL] } });
    expect(noKubeconfig.error?.message).toBe(
      "context deadline exceeded: waiting for all k8s nodes to report: error getting kubeconfig: resource KubernetesSecrets.secrets.talos.dev(secrets/k8s-certs@undefined) doesn't exist",
    );
    const s2 = healthyState();
    const k8s = recordingFactory();
    k8s.api.put(PODS, pod("kube-scheduler-cp-1", "kube-scheduler", { ready: "False" }));
    const down = await callHealth(s2, { waitTimeout: { seconds: 30n, nanos: 0 }, clusterInfo: { controlPlaneNodes: [LOCAL] } }, fakeClock(), k8s);
    expect(down.error?.code).toBe(Code.DeadlineExceeded);
    expect(down.error?.message).toBe("context deadline exceeded: waiting for all control plane components to be ready: some pods are not ready for kube-scheduler: [kube-scheduler-cp-1]");
    expect(k8s.api.closed).toBe(true);
  });

  it("uses the request's node lists and times out with DeadlineExceeded on a failing check", async () => {
    const s = healthyState();
    put(s, RUNTIME_NS, MachineStatusType.type, "machine", { stage: "booting", status: { ready: false, unmetConditions: [] } });
    const clock = fakeClock();
    const { msgs, error } = await callHealth(s, { waitTimeout: { seconds: 30n, nanos: 0 }, clusterInfo: { controlPlaneNodes: [LOCAL] } }, clock);
    expect(msgs[0]).toBe('discovered nodes: ["10.5.0.2"]');
    expect(error?.code).toBe(Code.DeadlineExceeded);
    expect(error?.message).toBe("context deadline exceeded: waiting for all nodes to finish boot sequence: nodes are not running: booting: [10.5.0.2]");
    expect(msgs[msgs.length - 1]).toBe("waiting for all nodes to finish boot sequence: nodes are not running: booting: [10.5.0.2]");
    expect(clock.t).toBe(30_000);
  });
});

describe("ClusterService.HealthCheck handler and other nodes", () => {
  const twoNodes = { waitTimeout: { seconds: 10n, nanos: 0 }, clusterInfo: { controlPlaneNodes: [LOCAL], workerNodes: [W] } };
  // A pool that cannot dial (no client certificate material): every forwarded read fails at connecting.
  const forwarder = (canForward: boolean) => ({ pool: new BackendPool(() => undefined), isLocal: () => false, canForward: () => canForward });

  it("a node holding no client certificate cannot ask the others, and says so", async () => {
    const { error } = await callHealth(healthyState(), twoNodes, fakeClock(), recordingFactory(), { forwarder: forwarder(false) });
    expect(error?.code).toBe(Code.DeadlineExceeded);
    expect(error?.message).toBe(
      `context deadline exceeded: waiting for apid to be ready: error getting version from node "10.5.0.3": node "10.5.0.3" is not reachable: ${NO_CLIENT_CERTIFICATE}`,
    );
  });

  it("another node is asked through the forwarder, its failure is the check's last error", async () => {
    const { msgs, error } = await callHealth(healthyState(), twoNodes, fakeClock(), recordingFactory(), { forwarder: forwarder(true) });
    expect(msgs[0]).toBe('discovered nodes: ["10.5.0.2" "10.5.0.3"]');
    // The checks of control planes only (etcd) pass: only this node is asked.
    expect(msgs).toContain("waiting for etcd to be healthy: OK");
    expect(error?.message).toBe(
      'context deadline exceeded: waiting for apid to be ready: error getting version from node "10.5.0.3": rpc error: code = Unavailable desc = no client certificate to forward with',
    );
  });

  it("a forwarded read goes one-to-one to the node with the caller's roles as talos-role, proxyfrom set, and a deadline", async () => {
    const calls: { target: string; path: string; roles: unknown[]; proxyfrom: unknown[]; deadline?: number }[] = [];
    const pool = {
      get: (target: string) => ({
        open: async (path: string, md: grpc.Metadata, deadline?: number) => {
          calls.push({ target, path, roles: md.get("talos-role"), proxyfrom: md.get("proxyfrom"), deadline });
          throw new StatusError(grpc.status.UNAVAILABLE, "test backend");
        },
      }),
    } as unknown as BackendPool;
    const started = Date.now();
    await callHealth(healthyState(), twoNodes, fakeClock(), recordingFactory(), { forwarder: { pool, isLocal: () => false, canForward: () => true } });
    expect(calls.length).toBeGreaterThan(0);
    expect(calls[0]).toMatchObject({ target: W, path: "/machine.MachineService/Version", roles: ["os:operator"], proxyfrom: ["unknown"] });
    // The default per-read deadline: 10 s.
    expect(calls[0].deadline! - started).toBeGreaterThanOrEqual(9_000);
    expect(calls[0].deadline! - started).toBeLessThanOrEqual(11_000);
  });
});

describe("InspectService.ControllerRuntimeDependencies", () => {
  it("maps the runtime's dependency graph to proto edges", async () => {
    const rt = new ControllerRuntime(new InMemoryState());
    rt.register({ name: "cluster.InfoController", inputs: [{ namespace: "config", type: "MachineConfigs.config.talos.dev", id: "v1alpha1", kind: "weak" }], outputs: [{ type: "Infos.cluster.talos.dev", kind: "exclusive" }], reconcile() {} });
    const h = inspectHandlers({ ...deps(new InMemoryState()), runtime: rt });
    const reply = await h.ControllerRuntimeDependencies({}, ctx);
    expect(reply.messages[0].edges).toEqual([
      { controllerName: "cluster.InfoController", edgeType: DependencyEdgeType.OUTPUT_EXCLUSIVE, resourceNamespace: "", resourceType: "Infos.cluster.talos.dev", resourceId: "" },
      { controllerName: "cluster.InfoController", edgeType: DependencyEdgeType.INPUT_WEAK, resourceNamespace: "config", resourceType: "MachineConfigs.config.talos.dev", resourceId: "v1alpha1" },
    ]);
    await expect(inspectHandlers(deps(new InMemoryState())).ControllerRuntimeDependencies({}, ctx)).rejects.toThrow("controller runtime is not running");
  });
});
