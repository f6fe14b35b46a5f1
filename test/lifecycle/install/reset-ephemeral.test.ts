/**
 * What a reset wipes where EPHEMERAL is not a partition (local mode, a sandbox): the state folder's files, and the
 * folders the mode keeps outside it (a sandbox's /var/lib/etcd). A non-graceful reset does not leave etcd, so
 * only this wipe keeps the node from coming back with its old member's data.
 */
import "./env.js";
import { afterEach, describe, expect, it } from "vitest";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { runReset, type ResetEnv, type ResetPlan } from "../../../src/lifecycle/install/reset-flow.js";
import type { Node } from "../../../src/lifecycle/node.js";
import type { SequenceReporter } from "../../../src/lifecycle/sequence.js";

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

function rig() {
  const root = mkdtempSync(join(tmpdir(), "reset-ephemeral-"));
  roots.push(root);
  const stateDir = join(root, "state");
  const etcdData = join(root, "var-lib-etcd");
  mkdirSync(join(stateDir, "etcd"), { recursive: true });
  mkdirSync(join(etcdData, "member", "snap"), { recursive: true });
  writeFileSync(join(etcdData, "member", "snap", "db"), "old member");
  for (const f of ["config.yaml", "node-identity.yaml", "etcd.snapshot", "keep.txt"]) writeFileSync(join(stateDir, f), f);
  const phases: string[] = [];
  let restarted = 0;
  const seq = {
    actorId: "test",
    phase: async (name: string, tasks: [string, () => unknown][]) => {
      phases.push(name);
      for (const [, run] of tasks) await run();
    },
    fail: (err: unknown) => String(err),
  } as unknown as SequenceReporter;
  const node = {
    log: pino({ level: "silent" }),
    status: { setStage: () => {} },
    activeConfig: { machineType: () => "controlplane" },
    stopServices: async () => {},
    restart: async () => {
      restarted++;
    },
  } as unknown as Node;
  let leftEtcd = false;
  const env: ResetEnv = {
    node,
    stateDir,
    ephemeralDirs: [etcdData],
    disk: undefined,
    leaveEtcd: async () => {
      leftEtcd = true;
    },
    forgetSystemDisk: async () => {},
    release: () => {},
  };
  return { stateDir, etcdData, env, phases, seq, restarted: () => restarted, leftEtcd: () => leftEtcd };
}

const plan = (p: Partial<ResetPlan>): ResetPlan => ({ graceful: false, reboot: true, systemDisk: true, labels: [], userDisks: [], ...p });

describe("reset without a system disk", () => {
  it("a non-graceful reset of the whole system disk empties etcd's data folder outside the state folder and keeps the folder", async () => {
    const r = rig();
    await runReset(r.seq, plan({}), r.env);
    expect(r.leftEtcd()).toBe(false);
    expect(r.phases).toEqual(["stopEverything", "unmountSystem", "reset"]);
    expect(existsSync(r.etcdData)).toBe(true);
    expect(readdirSync(r.etcdData)).toEqual([]);
    expect(readdirSync(r.stateDir)).toEqual(["keep.txt"]);
    expect(r.restarted()).toBe(1);
  });

  it("wiping STATE alone keeps etcd's data; wiping EPHEMERAL alone empties it and keeps the config", async () => {
    const r = rig();
    await runReset(r.seq, plan({ labels: ["STATE"] }), r.env);
    expect(readdirSync(join(r.etcdData, "member", "snap"))).toEqual(["db"]);
    expect(existsSync(join(r.stateDir, "config.yaml"))).toBe(false);
    expect(existsSync(join(r.stateDir, "etcd.snapshot"))).toBe(true);

    const s = rig();
    await runReset(s.seq, plan({ labels: ["EPHEMERAL"] }), s.env);
    expect(readdirSync(s.etcdData)).toEqual([]);
    expect(existsSync(join(s.stateDir, "config.yaml"))).toBe(true);
    expect(existsSync(join(s.stateDir, "etcd"))).toBe(false);
  });

  it("a graceful reset of a control plane leaves etcd before anything is wiped", async () => {
    const r = rig();
    await runReset(r.seq, plan({ graceful: true }), r.env);
    expect(r.leftEtcd()).toBe(true);
    expect(r.phases[0]).toBe("leave");
    expect(readdirSync(r.etcdData)).toEqual([]);
  });
});
