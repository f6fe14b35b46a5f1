/**
 * Kill -9 the agent in the middle of applies, many times: the stored config must always be the old or
 * the new document (never missing, never half-written, never one of the refused ones mixed in among them),
 * and the agent must boot configured again.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, existsSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createServer } from "node:net";
import { ApplyConfigurationRequest_Mode as Mode } from "../../src/machinery/api/gen/machine/machine_pb.js";
import { applyPatches, parsePatch } from "../../src/machinery/config/patch/index.js";
import { loadConfig, validateConfig } from "../../src/machinery/config/index.js";
import { apply, clusterConfigs, eventually, insecureClient, mtlsClient, talosconfigCreds, version } from "../api/harness.js";

const ENTRY = path.resolve(__dirname, "../../src/main.ts");
// `node --import tsx` runs the TypeScript entry in this very process, so SIGKILL hits the agent itself.

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

function startAgent(stateDir: string, port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", ENTRY, "start", "--state-dir", stateDir, "--listen", `127.0.0.1:${port}`, "--log-level", "info", "--services", "off"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  return new Promise((resolve, reject) => {
    let out = "";
    child.stderr!.on("data", (b: Buffer) => (out += b.toString()));
    child.stdout!.on("data", (b: Buffer) => {
      out += b.toString();
      if (out.includes("machined API listening")) resolve(child);
    });
    child.once("exit", (code) => reject(new Error(`agent exited early (${code}): ${out}`)));
  });
}

function kill(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGKILL");
  });
}

describe("a power cut during apply-config", () => {
  let stateDir: string;
  let child: ChildProcess | undefined;
  beforeAll(() => {
    stateDir = mkdtempSync(path.join(tmpdir(), "machined-crash-"));
  });
  afterAll(async () => {
    if (child) await kill(child);
    rmSync(stateDir, { recursive: true, force: true });
  });

  it("never loses the stored config", async () => {
    const cfgs = await clusterConfigs();
    const variants = ["a", "b"].map((n) => applyPatches(cfgs.controlplane, [parsePatch(`machine:\n  network:\n    hostname: host-${n}\n`)]));
    // Refused by admission (they would lock the node out): interleaved with the good ones, never stored.
    const refused = [
      applyPatches(variants[0], [parsePatch("machine:\n  certSANs: ['999.999.999.999']\n")]),
      applyPatches(variants[1], [parsePatch(`machine:\n  ca:\n    key: ${Buffer.from("garbage").toString("base64")}\n`)]),
    ];
    for (const r of refused) expect(() => validateConfig(loadConfig(r), { mode: "local" })).toThrow(/machine\.(certSANs\[0\]|ca\.key): /);
    const mixed = [variants[0], refused[0], variants[1], refused[1]];
    const port = await freePort();
    const h = { address: `127.0.0.1:${port}` } as never;
    child = await startAgent(stateDir, port);
    const first = insecureClient(h);
    await apply(first, variants[0]);
    first.close();
    const creds = talosconfigCreds(cfgs.talosconfig);

    const rounds = 6;
    for (let i = 0; i < rounds; i++) {
      const c = mtlsClient(h, creds);
      await eventually(() => version(c), 15_000);
      // Fire applies back to back and cut the power at a random moment among them.
      const inflight = Array.from({ length: 6 }, (_, k) => apply(c, mixed[(i + k) % 4], Mode.NO_REBOOT).catch(() => undefined));
      await new Promise((r) => setTimeout(r, Math.random() * 40));
      await kill(child);
      await Promise.allSettled(inflight);
      c.close();

      const stored = readFileSync(path.join(stateDir, "config.yaml"), "utf8");
      expect(variants).toContain(stored);
      expect(loadConfig(stored).hostname()).toMatch(/^host-[ab]$/);
      child = await startAgent(stateDir, port);
      // Interrupted temporaries are cleaned at start and never replace the config.
      await eventually(async () => expect(readdirSync(stateDir).filter((n) => n.endsWith(".tmp"))).toEqual([]));
    }
    const c = mtlsClient(h, creds);
    const v = await eventually(() => version(c), 15_000);
    expect(v.messages[0].features?.rbac).toBe(true);
    c.close();
    expect(existsSync(path.join(stateDir, "config.yaml"))).toBe(true);
    // Seven starts of the TypeScript entry: ~10 s each on a quiet machine, over 30 s each at load 20 (the bound is
    // liveness, not speed).
  }, 480_000);
});
