/**
 * Nodes for tests that need real machines: each a local-mode sandbox (`machined start --sandbox`: its own network,
 * mount and UTS namespaces, upstream's paths), several of them on one bridge the test makes, reaching the loopback
 * registry (`make registry`, 127.0.0.1:5000) through a forwarder on the bridge's address. Everything made here is
 * undone by `stop()`: the host's network, sysctls and netfilter are left as they were.
 *
 * Needs root, the built agent (dist/), and the component images in the registry; `sandboxSkipReason()` says what is
 * missing. Never match a sandbox with `pkill -f`: its command line is also in the shell that started the test.
 */
import { gunzipSync } from "node:zlib";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import * as net from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const TOP = resolve(fileURLToPath(new URL(".", import.meta.url)), "../..");
export const AGENT = join(TOP, "dist/machined.mjs");
export const REGISTRY = "127.0.0.1:5000";

/** Why sandbox tests cannot run here, or undefined. */
export async function sandboxSkipReason(opts: { images?: string[] } = {}): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return "needs root (network and mount namespaces)";
  for (const bin of ["ip", "nsenter", "unshare", "containerd", "runc", "ctr"]) {
    if (spawnSync("sh", ["-c", `command -v ${bin}`]).status !== 0) return `${bin} is not installed`;
  }
  if (!existsSync(AGENT)) return "dist/machined.mjs is missing (npm run build)";
  for (const repo of opts.images ?? ["siderolabs/kubelet", "etcd", "kube-apiserver", "pause"]) {
    const tags = await fetch(`http://${REGISTRY}/v2/${repo}/tags/list`).then((r) => (r.ok ? r.json() : undefined), () => undefined);
    if (!tags) return `image ${repo} is not in the loopback registry ${REGISTRY} (make kube-images && make registry)`;
  }
  return undefined;
}

/** A config patch that sends every image pull of the node to the loopback registry (through `gateway`). */
export function mirrorsPatch(gateway: string): string {
  const ep = `[http://${gateway}:5000]`;
  return `machine:\n  registries:\n    mirrors:\n      registry.k8s.io:\n        endpoints: ${ep}\n      ghcr.io:\n        endpoints: ${ep}\n      docker.io:\n        endpoints: ${ep}\n`;
}

export interface Lab {
  bridge: string;
  /** The bridge's address: the nodes' gateway and where the registry is forwarded. */
  gateway: string;
  /** `<prefix>.N/24` for node N (N ≥ 2). */
  address(n: number): string;
  stop(): Promise<void>;
}

const ipcmd = (...args: string[]) => {
  const r = spawnSync("ip", args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`ip ${args.join(" ")}: ${r.stderr.trim()}`);
};

/** A bridge on the host with `<prefix>.1/24`, and the registry forwarded onto it. */
export async function startLab(name: string, prefix: string): Promise<Lab> {
  const bridge = `mlab-${name}`.slice(0, 15);
  const gateway = `${prefix}.1`;
  ipcmd("link", "add", bridge, "type", "bridge");
  try {
    ipcmd("addr", "add", `${gateway}/24`, "dev", bridge);
    ipcmd("link", "set", bridge, "up");
  } catch (err) {
    spawnSync("ip", ["link", "del", bridge]);
    throw err;
  }
  // Connections of nodes that are gone (their namespace deleted, no FIN ever comes) would keep close() waiting.
  const open = new Set<net.Socket>();
  const forwarder = net.createServer((inbound) => {
    const out = net.connect(5000, "127.0.0.1");
    open.add(inbound).add(out);
    inbound.once("close", () => open.delete(inbound));
    out.once("close", () => open.delete(out));
    inbound.pipe(out).pipe(inbound);
    const close = () => {
      inbound.destroy();
      out.destroy();
    };
    inbound.on("error", close).on("close", close);
    out.on("error", close).on("close", close);
  });
  await new Promise<void>((res, rej) => forwarder.once("error", rej).listen(5000, gateway, () => res()));
  return {
    bridge,
    gateway,
    address: (n) => `${prefix}.${n}/24`,
    async stop() {
      const closed = new Promise<void>((res) => forwarder.close(() => res()));
      for (const sock of open) sock.destroy();
      await closed;
      spawnSync("ip", ["link", "del", bridge]);
    },
  };
}

export interface SandboxNode {
  name: string;
  stateDir: string;
  /** The node's address (no prefix length): talosctl and the API at `<ip>:50000`. */
  ip: string;
  /** The agent's process id on the host (the launcher: the sandbox's processes descend from it). */
  pid: number;
  log(): string;
  /** Stops the node and removes its state folder and log (`keepState`: the caller removes them). */
  stop(opts?: { keepState?: boolean }): Promise<void>;
}

/** Starts a sandboxed node on `lab` and waits for its API to accept connections. */
/** `nodeArgs` go to node before the agent (the launcher passes them on to the node), e.g. `--cpu-prof`. */
export async function startSandbox(lab: Lab, name: string, n: number, opts: { logLevel?: string; nodeArgs?: string[] } = {}): Promise<SandboxNode> {
  const stateDir = mkdtempSync(join(tmpdir(), `machined-sb-${name}-`));
  const address = lab.address(n);
  const ip = address.split("/")[0];
  const logFile = `${stateDir}.log`;
  const child: ChildProcess = spawn(
    "sh",
    [
      "-c",
      `exec "$0" "$@" > ${JSON.stringify(logFile)} 2>&1`,
      process.execPath,
      ...(opts.nodeArgs ?? []),
      AGENT,
      "start",
      "--sandbox",
      "--state-dir",
      stateDir,
      "--sandbox-address",
      address,
      "--sandbox-bridge",
      lab.bridge,
      "--sandbox-gateway",
      lab.gateway,
      "--sandbox-forward",
      "",
      "--log-level",
      opts.logLevel ?? "info",
    ],
    { detached: true, stdio: "ignore" },
  );
  const exited = new Promise<void>((res) => child.once("exit", () => res()));
  const node: SandboxNode = {
    name,
    stateDir,
    ip,
    pid: child.pid!,
    log: () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : ""),
    async stop(o = {}) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const timeout = new Promise<"timeout">((res) => setTimeout(() => res("timeout"), 90_000));
        if ((await Promise.race([exited, timeout])) === "timeout") child.kill("SIGKILL");
      }
      if (o.keepState) return;
      rmSync(stateDir, { recursive: true, force: true, maxRetries: 5 });
      rmSync(logFile, { force: true });
    },
  };
  const deadline = Date.now() + 60_000;
  while (!(await connects(ip, 50000))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      const log = node.log();
      await node.stop();
      throw new Error(`sandbox ${name} did not come up:\n${log.slice(-3000)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return node;
}

function connects(host: string, port: number): Promise<boolean> {
  return new Promise((res) => {
    const s = net.connect({ host, port, timeout: 1000 }, () => {
      s.destroy();
      res(true);
    });
    s.on("error", () => res(false)).on("timeout", () => {
      s.destroy();
      res(false);
    });
  });
}

/** A temporary folder (removed by the caller) for configs and kubeconfigs. */
export function workDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `${prefix}-`));
}

/** Polls `fn` every `intervalMs` until it stops throwing, at most `ms`; the last error is in the timeout's message. */
export async function until<T>(what: string, ms: number, fn: () => Promise<T>, intervalMs = 2000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  }
}

/** The one file of a gzipped tar (the Kubeconfig reply). */
export function untarOne(gz: Uint8Array, name: string): string {
  const tar = gunzipSync(gz);
  for (let off = 0; off + 512 <= tar.length; ) {
    const header = tar.subarray(off, off + 512);
    const file = header.subarray(0, 100).toString("utf8").replace(/\0.*$/s, "");
    if (!file) break;
    const size = parseInt(header.subarray(124, 136).toString("utf8").replace(/\0.*$/s, "").trim(), 8);
    if (file === name) return tar.subarray(off + 512, off + 512 + size).toString("utf8");
    off += 512 + Math.ceil(size / 512) * 512;
  }
  throw new Error(`${name} is not in the archive`);
}
