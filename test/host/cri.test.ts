/**
 * The CRI client and inspector, and the `containers -k` / `stats -k` / `logs -k` / `restart -k` handlers, against a
 * real CRI containerd (Debian's 1.6, CRI plugin on) under a temp state folder. The test plays the kubelet: it runs a
 * host-network pod sandbox and a container through the CRI with the labels and log path the kubelet gives them (an
 * offline busybox image stands in for the pause and app images; nothing is pulled). Needs root, containerd, ctr,
 * runc, umoci and busybox.
 */
import { existsSync, readFileSync, rmdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { Metadata } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiDeps } from "../../src/api/deps.js";
import { containerHandlers } from "../../src/api/handlers/containers.js";
import { logHandlers } from "../../src/api/handlers/logs.js";
import type { CallContext } from "../../src/api/transport/context.js";
import { criClient, type CriClient, type GrpcCriClient } from "../../src/host/cri/client.js";
import { CriInspector, parseContainerId } from "../../src/host/cri/inspector.js";
import { noCgroups } from "../../src/host/cgroups.js";
import { isCgroupV1, removeV1Folder } from "../../src/host/cgroups-v1.js";
import { ContainerDriver } from "../../src/machinery/api/gen/common/common_pb.js";
import {
  ContainerSchema,
  ContainerState,
  ContainerStatusResponseSchema,
  NamespaceMode,
  RuntimeService,
  type Container,
} from "../../src/machinery/api/gen/cri/runtime/v1/api_pb.js";
import { create } from "@bufbuild/protobuf";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { PodSandboxConfigSchema } from "../../src/machinery/api/gen/cri/runtime/v1/api_pb.js";
import { ApiError } from "../../src/machinery/errors.js";
import { LogManager } from "../../src/supervisor/logs.js";
import { ContainerdService } from "../../src/supervisor/services/containerd.js";
import { Supervisor } from "../../src/supervisor/supervisor.js";
import { buildTinyImage, killByMarker, missing, tempDir, waitUntil } from "../supervisor/helpers.js";

const skip = missing({ root: true, bins: ["containerd", "ctr", "runc", "umoci", "busybox"] });
if (skip) console.log(`skipping CRI tests: ${skip}`);

const IMAGE = "docker.io/test/tiny:v1";
const POD = { name: "web", namespace: "demo", uid: "uid-1" };
/** The pod's cgroup folder: its own, removed after (cgroupfs driver; the host's tree is left as found). */
const CGROUP = `machined-cri-test-${process.pid}`;

function ctx(signal = new AbortController().signal): CallContext {
  return { method: "/machine.MachineService/Test", roles: new Set(["os:admin"]), maintenance: false, metadata: new Metadata(), peer: "test", signal };
}

describe.skipIf(!!skip)("CRI inspector against a real CRI containerd", () => {
  let dir: string;
  let sup: Supervisor;
  let cd: ContainerdService;
  let cri: GrpcCriClient;
  let podId = "";
  let ctrId = "";
  let logDir = "";
  let deps: ApiDeps;

  beforeAll(async () => {
    dir = tempDir("cri");
    sup = new Supervisor({ cgroups: noCgroups, logs: new LogManager(join(dir, "logs")), waitDescribeIntervalMs: 50 });
    cd = new ContainerdService({
      id: "cri",
      stateDir: dir,
      cri: true,
      sandboxImage: IMAGE,
      restrictOomScoreAdj: true,
      cniBinDir: join(dir, "cni-bin"),
      cniConfDir: join(dir, "cni-conf"),
      health: { initialDelayMs: 50, periodMs: 200 },
      gracefulStopMs: 5000,
    });
    sup.load(cd);
    sup.start("cri");
    const tar = buildTinyImage(dir);
    await sup.waitFor("cri", "up", AbortSignal.timeout(30_000));
    await cd.ctr.exec(["images", "import", "--base-name", "docker.io/test/tiny", tar], "k8s.io");
    cri = criClient(cd.address);
    deps = { cri: () => criClient(cd.address) } as unknown as ApiDeps;

    // What the kubelet does for a hostNetwork pod with one container.
    logDir = join(dir, "pods", `${POD.namespace}_${POD.name}_${POD.uid}`);
    const sandboxConfig: MessageInitShape<typeof PodSandboxConfigSchema> = {
      metadata: { ...POD, attempt: 0 },
      logDirectory: logDir,
      labels: { "io.kubernetes.pod.name": POD.name, "io.kubernetes.pod.namespace": POD.namespace, "io.kubernetes.pod.uid": POD.uid },
      linux: { cgroupParent: `/${CGROUP}`, securityContext: { namespaceOptions: { network: NamespaceMode.NODE, pid: NamespaceMode.CONTAINER, ipc: NamespaceMode.POD } } },
    };
    podId = (await cri.unary(RuntimeService.method.runPodSandbox, { config: sandboxConfig })).podSandboxId;
    ctrId = (
      await cri.unary(RuntimeService.method.createContainer, {
        podSandboxId: podId,
        sandboxConfig,
        config: {
          metadata: { name: "app", attempt: 0 },
          image: { image: IMAGE },
          command: ["/bin/sh", "-c", 'echo hello-out; echo hello-err >&2; i=0; while true; do i=$((i+1)); echo "tick $i"; sleep 0.2; done'],
          labels: { "io.kubernetes.pod.name": POD.name, "io.kubernetes.pod.namespace": POD.namespace, "io.kubernetes.container.name": "app" },
          annotations: { "io.kubernetes.container.restartCount": "0" },
          logPath: "app/0.log",
        },
      })
    ).containerId;
    await cri.unary(RuntimeService.method.startContainer, { containerId: ctrId });
  }, 90_000);

  afterAll(async () => {
    if (podId) {
      await cri.unary(RuntimeService.method.stopPodSandbox, { podSandboxId: podId }).catch(() => undefined);
      await cri.unary(RuntimeService.method.removePodSandbox, { podSandboxId: podId }).catch(() => undefined);
    }
    cri?.close();
    await sup?.shutdown();
    if (isCgroupV1()) removeV1Folder(CGROUP);
    else if (existsSync(`/sys/fs/cgroup/${CGROUP}`)) rmdirSync(`/sys/fs/cgroup/${CGROUP}`);
    // Shims outlive containerd by design; any left means a container was not stopped.
    expect(killByMarker(dir)).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it("lists the ready sandbox and its container as upstream's CRI inspector does", async () => {
    const insp = new CriInspector(criClient(cd.address));
    try {
      const pods = await insp.pods();
      expect(pods.map((p) => p.name)).toEqual(["demo/web"]);
      const [sandbox, app] = pods[0].containers;
      expect(sandbox).toMatchObject({ display: "demo/web", name: "demo/web", id: podId, uid: "uid-1", isPodSandbox: true, status: "SANDBOX_READY", image: IMAGE });
      expect(sandbox.pid).toBeGreaterThan(0);
      expect(app).toMatchObject({
        display: `demo/web:app:${ctrId.slice(0, 12)}`,
        name: "app",
        id: ctrId,
        podName: "demo/web",
        image: IMAGE,
        status: "CONTAINER_RUNNING",
        restartCount: "0",
        logPath: join(logDir, "app/0.log"),
        isPodSandbox: false,
      });
      expect(app.pid).toBeGreaterThan(0);
      expect(readFileSync(`/proc/${app.pid}/cmdline`, "utf8")).toContain("tick");
    } finally {
      insp.close();
    }
  });

  it("finds a container by the ids talosctl uses", async () => {
    const insp = new CriInspector(criClient(cd.address));
    try {
      expect((await insp.container("demo/web:app"))?.id).toBe(ctrId);
      expect((await insp.container(`demo/web:app:${ctrId.slice(0, 12)}`))?.id).toBe(ctrId);
      expect((await insp.container("demo/web"))).toMatchObject({ id: podId, isPodSandbox: true });
      expect(await insp.container("demo/web:nope")).toBeUndefined();
      expect(await insp.container("other/web:app")).toBeUndefined();
      expect(await insp.container("kube-apiserver")).toBeUndefined();
      await expect(insp.container("demo/web:app:ffffffffffff")).rejects.toThrow('container "demo/web:app:ffffffffffff" not found');
    } finally {
      insp.close();
    }
  });

  it("answers Containers and Stats with the CRI driver", async () => {
    const h = containerHandlers(deps);
    const res = (await h.Containers({ namespace: "k8s.io", driver: ContainerDriver.CRI }, ctx())) as { messages: { containers: Record<string, unknown>[] }[] };
    const rows = res.messages[0].containers;
    expect(rows).toEqual([
      expect.objectContaining({ namespace: "k8s.io", id: "demo/web", podId: "demo/web", internalId: podId, status: "SANDBOX_READY" }),
      expect.objectContaining({ namespace: "k8s.io", id: `demo/web:app:${ctrId.slice(0, 12)}`, podId: "demo/web", name: "app", image: IMAGE, status: "CONTAINER_RUNNING" }),
    ]);
    await waitUntil(async () => {
      const st = (await h.Stats({ namespace: "k8s.io", driver: ContainerDriver.CRI }, ctx())) as { messages: { stats: { id: string; memoryUsage: bigint }[] }[] };
      return st.messages[0].stats.some((s) => s.id.startsWith("demo/web:app:") && s.memoryUsage > 0n);
    }, 20_000, "container memory stats");
    const bad = await Promise.resolve(h.Containers({ namespace: "system", driver: ContainerDriver.CRI }, ctx())).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(ApiError);
    expect((bad as Error).message).toBe("CRI inspector is supported only for K8s namespace");
  });

  it("serves the container's CRI log: whole, tailed, and followed", async () => {
    const logs = logHandlers(deps);
    const read = async (req: { id: string; tailLines: number; follow?: boolean }, signal?: AbortSignal, until?: (s: string) => boolean) => {
      let out = "";
      const ac = new AbortController();
      const sig = signal ?? ac.signal;
      await logs.Logs(
        { namespace: "k8s.io", driver: ContainerDriver.CRI, follow: false, ...req },
        async (m: { bytes: Uint8Array }) => {
          out += Buffer.from(m.bytes).toString();
          if (until?.(out)) ac.abort();
        },
        ctx(sig),
      );
      return out;
    };
    await waitUntil(() => existsSync(join(logDir, "app/0.log")) && readFileSync(join(logDir, "app/0.log"), "utf8").includes("tick 3"), 20_000, "ticks");
    const all = await read({ id: "demo/web:app", tailLines: -1 });
    const lines = all.trimEnd().split("\n");
    // The kubelet's format, sent as written: `<RFC3339Nano time> <stream> <P|F> <text>`. The first two lines are
    // hello-out and hello-err in either order (containerd copies stdout and stderr on separate pipes).
    const stamp = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+(Z|[+-]\d\d:\d\d) /;
    expect(lines.slice(0, 2).every((l) => stamp.test(l))).toBe(true);
    expect(lines.slice(0, 2).some((l) => / stdout F hello-out$/.test(l))).toBe(true);
    expect(lines.some((l) => / stderr F hello-err$/.test(l))).toBe(true);
    const tail = (await read({ id: `demo/web:app:${ctrId.slice(0, 12)}`, tailLines: 2 })).trimEnd().split("\n");
    expect(tail).toHaveLength(2);
    expect(tail.every((l) => / stdout F tick \d+$/.test(l))).toBe(true);

    // Follow from the end: only new lines arrive, until the caller goes away.
    const last = Number(/tick (\d+)\s*$/.exec(all)![1]);
    const followed = await read({ id: "demo/web:app", tailLines: 0, follow: true }, undefined, (s) => (s.match(/tick \d+/g) ?? []).length >= 3);
    const ticks = [...followed.matchAll(/tick (\d+)/g)].map((m) => Number(m[1]));
    expect(ticks.length).toBeGreaterThanOrEqual(3);
    expect(ticks[0]).toBeGreaterThan(last);
    expect(followed).not.toContain("hello-out");
  }, 40_000);

  it("says what is wrong for an unknown container, a sandbox (no log) and an id without a pod", async () => {
    const logs = logHandlers(deps);
    const err = (id: string) =>
      Promise.resolve(logs.Logs({ namespace: "k8s.io", driver: ContainerDriver.CRI, id, tailLines: -1, follow: false }, async () => {}, ctx())).then(
        () => "no error",
        (e: Error) => e.message,
      );
    expect(await err("demo/web:ghost")).toBe('container "demo/web:ghost" not found');
    expect(await err("demo/web")).toBe("no log available");
    expect(await err("ghost")).toBe('container "ghost" not found');
  });

  it("restarts a container by stopping it (the kubelet would start it again)", async () => {
    const h = containerHandlers(deps);
    await h.Restart({ namespace: "k8s.io", driver: ContainerDriver.CRI, id: "demo/web:app" }, ctx());
    await waitUntil(async () => (await cri.listContainers({ id: ctrId }))[0]?.state === 2, 20_000, "container exited");
    const gone = await Promise.resolve(h.Restart({ namespace: "k8s.io", driver: ContainerDriver.CRI, id: "demo/web:ghost" }, ctx())).catch((e: Error) => e.message);
    expect(gone).toBe('container "demo/web:ghost" not found');

    // The kubelet's next attempt, next to the exited one: the name alone now means the new one.
    const next = (
      await cri.unary(RuntimeService.method.createContainer, {
        podSandboxId: podId,
        sandboxConfig: { metadata: { ...POD, attempt: 0 }, logDirectory: logDir, linux: { cgroupParent: `/${CGROUP}` } },
        config: {
          metadata: { name: "app", attempt: 1 },
          image: { image: IMAGE },
          command: ["/bin/sh", "-c", "echo second-attempt; exec sleep 3600"],
          labels: { "io.kubernetes.pod.name": POD.name, "io.kubernetes.pod.namespace": POD.namespace, "io.kubernetes.container.name": "app" },
          logPath: "app/1.log",
        },
      })
    ).containerId;
    await cri.unary(RuntimeService.method.startContainer, { containerId: next });
    const insp = new CriInspector(criClient(cd.address));
    try {
      expect((await insp.container("demo/web:app"))?.id).toBe(next);
      expect((await insp.container(`demo/web:app:${ctrId.slice(0, 12)}`))?.status).toBe("CONTAINER_EXITED");
      expect((await insp.pods())[0].containers.map((c) => c.id).sort()).toEqual([podId, ctrId, next].sort());
    } finally {
      insp.close();
    }
  }, 30_000);

  it("parses talosctl's container ids", () => {
    expect(parseContainerId("kube-system/kube-apiserver-n1:kube-apiserver:abc")).toEqual({ namespace: "kube-system", pod: "kube-apiserver-n1", name: "kube-apiserver", containerId: "abc" });
    expect(parseContainerId("kube-system/coredns")).toEqual({ namespace: "kube-system", pod: "coredns", name: "", containerId: "" });
    expect(parseContainerId("etcd")).toEqual({ namespace: "", pod: "", name: "etcd", containerId: "" });
  });
});

describe("CRI inspector choosing among attempts", () => {
  // Shaped like containerd's answers (only the fields the inspector reads).
  const attempt = (id: string, n: number, state: ContainerState) =>
    create(ContainerSchema, { id, podSandboxId: "sb", metadata: { name: "app", attempt: n }, state, labels: { "io.kubernetes.pod.name": "web", "io.kubernetes.pod.namespace": "demo" } });
  const fake = (list: Container[]): CriClient =>
    ({
      listContainers: async () => list,
      containerStatus: async (id: string) => create(ContainerStatusResponseSchema, { status: { id, logPath: `/var/log/pods/demo_web_u/app/${id}.log` } }),
      close: () => {},
    }) as unknown as CriClient;

  it("takes the latest attempt whatever order the runtime lists them in", async () => {
    const old = attempt("aaaa", 0, ContainerState.CONTAINER_EXITED);
    const cur = attempt("bbbb", 1, ContainerState.CONTAINER_RUNNING);
    for (const list of [[old, cur], [cur, old]]) {
      const c = await new CriInspector(fake(list)).container("demo/web:app");
      expect(c).toMatchObject({ id: "bbbb", status: "CONTAINER_RUNNING", logPath: "/var/log/pods/demo_web_u/app/bbbb.log" });
    }
    expect((await new CriInspector(fake([old, cur])).container("demo/web:app:aaa"))?.id).toBe("aaaa");
  });
});

describe("CRI client errors", () => {
  it("names the call and the socket when no runtime listens", async () => {
    const c = criClient(join(tempDir("cri-none"), "containerd.sock"), { timeoutMs: 2000 });
    try {
      const e = await c.listContainers({}).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(ApiError);
      expect((e as ApiError).code).toBe(14);
      expect((e as Error).message).toMatch(/^ListContainers: CRI runtime at \/.*containerd\.sock is not reachable: /);
    } finally {
      c.close();
    }
  });
});
