/**
 * Real containerd (Debian 1.6) under a temp state folder, and an offline umoci image run as a service
 * through the containerd runner. Needs root, containerd, ctr, runc, umoci and busybox.
 */
import { writeFileSync, mkdirSync, existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { groupMembers } from "../../src/host/process.js";
import { noCgroups } from "../../src/host/cgroups.js";
import { LogManager } from "../../src/supervisor/logs.js";
import { ContainerdRunner } from "../../src/supervisor/runners/containerd.js";
import { ContainerdService, containerdConfig, containerdPaths } from "../../src/supervisor/services/containerd.js";
import { Supervisor } from "../../src/supervisor/supervisor.js";
import type { Service } from "../../src/supervisor/types.js";
import { buildTinyImage, collect, eventMsgs, freePort, killByMarker, missing, startedPid, tempDir, waitUntil, waitUp } from "./helpers.js";

const skip = missing({ root: true, bins: ["containerd", "ctr", "runc", "umoci", "busybox"] });
if (skip) console.log(`skipping containerd tests: ${skip}`);

describe.skipIf(!!skip)("containerd service and runner", () => {
  let dir: string;
  let sup: Supervisor;
  let cd: ContainerdService;
  let image: string;

  beforeAll(async () => {
    dir = tempDir("sup-ctrd");
    sup = new Supervisor({ cgroups: noCgroups, logs: new LogManager(join(dir, "logs")), waitDescribeIntervalMs: 50 });
    cd = new ContainerdService({ stateDir: dir, cri: false, health: { initialDelayMs: 50, periodMs: 200 }, gracefulStopMs: 3000 });
    sup.load(cd);
    sup.start("containerd");
    const tar = buildTinyImage(dir);
    await sup.waitFor("containerd", "up", AbortSignal.timeout(20_000));
    await cd.ctr.exec(["images", "import", "--base-name", "docker.io/test/tiny", tar], "system");
    image = "docker.io/test/tiny:v1";
  });

  afterAll(async () => {
    await sup?.shutdown();
    // Shims outlive containerd by design; any left means a container was not stopped.
    expect(killByMarker(dir)).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("writes a config that keeps every path under the state folder", () => {
    const p = containerdPaths("/x/state");
    const cfg = containerdConfig(p, { cri: true });
    expect(cfg).toContain('root = "/x/state/containerd/root"');
    expect(cfg).toContain('address = "/x/state/containerd/run/containerd.sock"');
    expect(cfg).toContain('path = "/x/state/containerd/root/opt"');
    expect(cfg).toContain('bin_dir = "/usr/lib/cni"');
    expect(containerdPaths().socket).toBe("/run/containerd/containerd.sock");
    expect(readFileSync(cd.paths.config, "utf8")).toContain(cd.paths.socket);
  });

  it("answers on its socket with the system and k8s.io namespaces", async () => {
    expect(sup.info("containerd")?.health).toMatchObject({ healthy: true, unknown: false });
    expect(await cd.ctr.version()).toMatch(/^1\./);
    const ns = await cd.ctr.namespaces();
    expect(ns).toEqual(expect.arrayContaining(["system", "k8s.io"]));
    expect(eventMsgs(sup, "containerd")).toContain("Health check successful");
  });

  it("runs an image as a service task, restarts it after a kill, and stops it", async () => {
    const bind = join(dir, "bind");
    mkdirSync(bind, { recursive: true });
    writeFileSync(join(bind, "hello.txt"), "hello-from-host");
    const tiny: Service = {
      id: "tiny",
      dependsOn: () => ["containerd"],
      restart: () => ({ initialDelayMs: 100, maxDelayMs: 400 }),
      runner: () =>
        new ContainerdRunner({
          address: cd.address,
          namespace: "system",
          containerId: "tiny",
          image,
          args: ["/entrypoint.sh", "hello world", "second"],
          mounts: [{ src: bind, dst: "/data", options: ["rbind", "ro"] }],
          gracefulStopMs: 3000,
        }),
    };
    sup.load(tiny);
    sup.start("tiny");
    await sup.waitFor("tiny", "up", AbortSignal.timeout(15_000));
    const started = eventMsgs(sup, "tiny").find((m) => m.startsWith("Started task"));
    expect(started).toMatch(/^Started task tiny \(PID \d+\) for container tiny$/);
    await waitUntil(() => sup.logs.get("tiny").tail().toString().includes("bind: hello-from-host"), 5000, "container output");
    const out = sup.logs.get("tiny").tail().toString();
    expect(out).toContain("entrypoint argc=2 args: hello world second");
    expect(out).toContain("arg: hello world");

    const list = await cd.listContainers("system");
    const c = list.find((x) => x.id === "tiny");
    expect(c).toMatchObject({ namespace: "system", image, status: "RUNNING" });
    const firstPid = c!.pid;
    expect(firstPid).toBeGreaterThan(0);
    expect(startedPid(sup, "tiny")).toBe(firstPid);

    const logs = await collect(await cd.containerLogs("system", "tiny", { tailLines: 2 }));
    expect(logs.trim().split("\n")).toHaveLength(2);
    await expect(cd.containerLogs("system", "nope")).rejects.toThrow('container "nope" not found');

    // A SIGKILL from outside: the runner sees exit 137 and the supervisor starts a new task.
    await cd.ctr.kill("system", "tiny", "SIGKILL");
    await waitUntil(() => eventMsgs(sup, "tiny").some((m) => m.includes("exit code 137")), 10_000, "crash event");
    await waitUntil(() => eventMsgs(sup, "tiny").filter((m) => m.startsWith("Started task")).length >= 2, 15_000, "restart");
    const secondPid = startedPid(sup, "tiny");
    expect(secondPid).not.toBe(firstPid);

    await sup.stop("tiny");
    expect(eventMsgs(sup, "tiny")).toContain(`Sending SIGTERM to task tiny (PID ${secondPid}, container tiny)`);
    expect(eventMsgs(sup, "tiny").some((m) => m.startsWith("Sending SIGKILL"))).toBe(false);
    expect((await cd.listContainers("system")).find((x) => x.id === "tiny")).toBeUndefined();
    expect(existsSync(join(dir, "logs", "tiny.log"))).toBe(true);
  });

  it("stops containerd without leaving its process group behind", async () => {
    await sup.waitFor("containerd", "up", AbortSignal.timeout(5000));
    const pid = startedPid(sup, "containerd");
    await sup.stop("containerd");
    expect(groupMembers(pid)).toEqual([]);
    expect(sup.info("containerd")?.state).toBe("Finished");
  });
});
