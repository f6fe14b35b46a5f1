/** `machined start`: local mode — an ordinary process serving the Talos API with all state in one folder. */
import * as path from "node:path";
import type { Command } from "./args.js";
import { UsageError } from "./args.js";
import { runLocalNode } from "../pid1/local.js";
import { runSandboxLauncher, runSandboxedNode } from "../pid1/sandbox.js";

export function parseListen(v: string): { host: string; port: number } {
  const m = /^(\[[^\]]+\]|[^:]*):(\d+)$/.exec(v);
  if (!m) throw new UsageError(`start: --listen must be HOST:PORT, got "${v}"`);
  const port = Number(m[2]);
  if (port < 0 || port > 65535) throw new UsageError(`start: --listen port out of range: ${port}`);
  return { host: m[1].replace(/^\[|\]$/g, "") || "0.0.0.0", port };
}

/** `--services auto|on|off`: auto (undefined) lets the node decide from root and the installed binaries. */
export function parseServices(v: string): boolean | undefined {
  if (v === "auto") return undefined;
  if (v === "on") return true;
  if (v === "off") return false;
  throw new UsageError(`start: --services must be auto, on or off, got "${v}"`);
}

export const startCommand: Command = {
  name: "start",
  summary: "run machined in local mode (maintenance mode until a config is applied)",
  usage:
    "machined start [--state-dir DIR] [--listen HOST:PORT] [--services auto|on|off]\n" +
    "       machined start --sandbox [--state-dir DIR] [--sandbox-address CIDR] [--sandbox-netns NAME | --sandbox-bridge BR --sandbox-gateway IP] [--sandbox-forward PORT,...]",
  options: {
    "state-dir": { type: "string", default: "./state" },
    listen: { type: "string", default: "127.0.0.1:50000" },
    "log-level": { type: "string", default: "info" },
    services: { type: "string", default: "auto" },
    // Kubernetes in local mode: the node in namespaces of its own (src/pid1/sandbox.ts), as root.
    sandbox: { type: "boolean", default: false },
    "sandbox-address": { type: "string", default: "10.213.0.2/24" },
    "sandbox-netns": { type: "string", default: "" },
    "sandbox-bridge": { type: "string", default: "" },
    "sandbox-gateway": { type: "string", default: "" },
    "sandbox-forward": { type: "string", default: "5000" },
    "sandbox-cni-bin": { type: "string", default: "" },
  },
  positionals: 0,
  async run(values) {
    const stateDir = path.resolve(String(values["state-dir"]));
    if (values.sandbox) {
      const sandbox = {
        stateDir,
        logLevel: String(values["log-level"]),
        netns: String(values["sandbox-netns"]) || undefined,
        bridge: String(values["sandbox-bridge"]) || undefined,
        gateway: String(values["sandbox-gateway"]) || undefined,
        address: String(values["sandbox-address"]),
        forward: String(values["sandbox-forward"]).split(",").filter(Boolean).map(Number),
        cniBin: String(values["sandbox-cni-bin"]) || undefined,
      };
      if (sandbox.forward.some((p) => !Number.isInteger(p) || p <= 0 || p > 65535)) throw new UsageError("start: --sandbox-forward takes TCP ports, e.g. 5000,5001");
      if (process.env.MACHINED_SANDBOXED === "1") {
        await runSandboxedNode(sandbox);
        return new Promise<number>(() => {});
      }
      return runSandboxLauncher(sandbox, process.argv.slice(1));
    }
    const listen = parseListen(String(values.listen));
    const services = parseServices(String(values.services));
    await runLocalNode({ stateDir, listen, logLevel: String(values["log-level"]), services });
    return new Promise<number>(() => {}); // serve until a signal ends the process
  },
};
