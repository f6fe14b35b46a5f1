/** The ctr client's parsing and argv, over FakeTools (the real daemon is exercised in containerd.test.ts). */
import { describe, expect, it } from "vitest";
import { FakeTools, ToolError } from "../../src/host/tools.js";
import { Ctr } from "../../src/supervisor/ctr.js";

describe("Ctr", () => {
  it("lists containers joined with their tasks, from ctr's columns", async () => {
    const tools = new FakeTools().on("ctr", (args) => {
      const cmd = args.slice(args.indexOf("-n") + 2).join(" ");
      if (cmd === "containers ls") return { stdout: "CONTAINER    IMAGE                       RUNTIME\netcd         registry.k8s.io/etcd:3.5    io.containerd.runc.v2\nidle         -                           io.containerd.runc.v2\n" };
      if (cmd === "tasks ls") return { stdout: "TASK    PID     STATUS\netcd    4242    RUNNING\n" };
      return { code: 1, stderr: `unexpected ${cmd}` };
    });
    const ctr = new Ctr("/run/containerd.sock", "ctr", tools);
    expect(await ctr.listContainers("system")).toEqual([
      { namespace: "system", id: "etcd", image: "registry.k8s.io/etcd:3.5", pid: 4242, status: "RUNNING" },
      { namespace: "system", id: "idle", image: "", pid: 0, status: "" },
    ]);
    expect(tools.calls[0]).toEqual(["ctr", "-a", "/run/containerd.sock", "--connect-timeout", "3s", "-n", "system", "containers", "ls"]);
  });

  it("fails with the tool's last stderr line, and as a missing binary when there is none", async () => {
    const ctr = new Ctr("/sock", "ctr", new FakeTools().on("ctr", () => ({ code: 1, stderr: "ctr: failed to dial\nconnection refused\n" })));
    await expect(ctr.version()).rejects.toThrow(/connection refused$/);
    await expect(ctr.version()).rejects.toBeInstanceOf(ToolError);
    await expect(new Ctr("/sock", "ctr", new FakeTools()).version()).rejects.toThrow(/ENOENT/);
  });
});
