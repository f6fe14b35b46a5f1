/** `machined start`: local mode — an ordinary process serving the Talos API with all state in one folder. */
import * as path from "node:path";
import type { Command } from "./args.js";
import { UsageError } from "./args.js";
import { runLocalNode } from "../pid1/local.js";

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
  usage: "machined start [--state-dir DIR] [--listen HOST:PORT] [--services auto|on|off]",
  options: {
    "state-dir": { type: "string", default: "./state" },
    listen: { type: "string", default: "127.0.0.1:50000" },
    "log-level": { type: "string", default: "info" },
    services: { type: "string", default: "auto" },
  },
  positionals: 0,
  async run(values) {
    const listen = parseListen(String(values.listen));
    const stateDir = path.resolve(String(values["state-dir"]));
    const services = parseServices(String(values.services));
    await runLocalNode({ stateDir, listen, logLevel: String(values["log-level"]), services });
    return new Promise<number>(() => {}); // serve until a signal ends the process
  },
};
