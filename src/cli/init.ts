/** `machined init`: PID 1 of the OS image (src/pid1/init.ts). /init runs it; it refuses to run as any other pid. */
import type { Command } from "./args.js";
import { runInit } from "../pid1/init.js";

export const initCommand: Command = {
  name: "init",
  summary: "run as PID 1 of the OS image (mounts, modules, switch root, network, API on :50000)",
  usage: "machined init [--port N] [--log-level LEVEL]",
  options: {
    port: { type: "string", default: "50000" },
    "log-level": { type: "string", default: "" },
  },
  positionals: 0,
  async run(values) {
    const port = Number(values.port);
    return runInit({ listenPort: Number.isInteger(port) && port > 0 ? port : 50000, logLevel: String(values["log-level"] || "") || undefined });
  },
};
