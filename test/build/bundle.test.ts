/**
 * The shipped artifact (scripts/build.mjs into a scratch folder): an ASCII-only bundle, a launcher that
 * V8 accepts the warm-up's code cache for, and a bundle whose deferred (lazy) protobuf descriptors still
 * encode correctly: a real start in maintenance mode answers Version and a COSI List whose proto specs
 * decode to what the YAML says.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fromBinary } from "@bufbuild/protobuf";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MachineService, VersionResponseSchema } from "../../src/machinery/api/gen/machine/machine_pb.js";
import { ListRequestSchema, ListResponseSchema, State } from "../../src/machinery/api/gen/cosi/state_pb.js";
import { RouteStatusSpecSchema } from "../../src/machinery/api/gen/resource/definitions/network/network_pb.js";
import { TestClient, insecureTls } from "../helpers/client.js";

const TOP = fileURLToPath(new URL("../..", import.meta.url));
// Inside the repository (build/ is ignored) so the bundle finds koffi in node_modules, as dist/ does.
mkdirSync(path.join(TOP, "build"), { recursive: true });
const out = mkdtempSync(path.join(TOP, "build", "bundle-test-"));
const state = mkdtempSync(path.join(tmpdir(), "machined-build-state-"));
let child: ChildProcess | undefined;
let stderr = "";
let port = 0;

beforeAll(async () => {
  const b = spawnSync(process.execPath, [path.join(TOP, "scripts/build.mjs"), "--outdir", out], { cwd: TOP, encoding: "utf8", timeout: 120_000 });
  if (b.status !== 0) throw new Error(`build failed: ${b.stderr}${b.stdout}`);
  child = spawn(process.execPath, [path.join(out, "machined.mjs"), "start", "--state-dir", state, "--listen", "127.0.0.1:0", "--services", "off"], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, MACHINED_CODE_CACHE_DEBUG: "1" },
  });
  child.stderr!.on("data", (d: Buffer) => (stderr += d));
  port = await new Promise<number>((resolve, reject) => {
    let buf = "";
    child!.stdout!.on("data", (d: Buffer) => {
      buf += d;
      const m = /"address":"127\.0\.0\.1:(\d+)".*API listening/.exec(buf);
      if (m) resolve(Number(m[1]));
    });
    child!.once("exit", (c) => reject(new Error(`bundle exited (${c}): ${stderr}`)));
  });
}, 180_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill("SIGKILL");
    await new Promise((r) => child!.once("exit", r));
  }
  rmSync(out, { recursive: true, force: true });
  rmSync(state, { recursive: true, force: true, maxRetries: 5 });
});

describe("the built bundle", () => {
  it("is ASCII only, so V8 keeps its source one byte per character", () => {
    const bytes = readFileSync(path.join(out, "machined.cjs"));
    expect(bytes.findIndex((b) => b > 0x7f)).toBe(-1);
    expect(bytes.length).toBeGreaterThan(1_000_000);
  });

  it("starts from the code cache the warm-up wrote", () => {
    expect(stderr).toContain("machined code cache: accepted");
  });

  it("answers Version and a COSI List whose (lazily decoded) proto specs match their YAML", async () => {
    const c = new TestClient(`127.0.0.1:${port}`, insecureTls());
    try {
      const v = await c.unary(MachineService, "Version", EmptySchema, VersionResponseSchema, {});
      expect(v.messages[0].version?.tag).toMatch(/^v\d/);
      const list = () => c.stream(State, "List", ListRequestSchema, ListResponseSchema, { namespace: "network", type: "RouteStatuses.net.talos.dev" });
      // The controllers observe the kernel right after start; wait for the routes to be there.
      let routes = await list();
      for (let i = 0; i < 100 && routes.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 50));
        routes = await list();
      }
      expect(routes.length).toBeGreaterThan(0);
      for (const r of routes) {
        const yaml = parse(r.resource!.spec!.yamlSpec) as { dst: string; gateway: string; priority: number; outLinkName?: string };
        const proto = fromBinary(RouteStatusSpecSchema, r.resource!.spec!.protoSpec);
        expect(proto.priority).toBe(yaml.priority);
        expect(proto.outLinkName).toBe(yaml.outLinkName ?? "");
      }
    } finally {
      c.close();
    }
  });
});
