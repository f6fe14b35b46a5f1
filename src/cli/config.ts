/** `machined config validate` and `machined config patch` (same meaning as `talosctl machineconfig patch`). */
import { hostFiles as files } from "../host/files/index.js";
import type { Command } from "./args.js";
import { UsageError } from "./args.js";
import { loadConfig } from "../machinery/config/index.js";
import { validateConfig } from "../machinery/config/validate.js";
import { applyPatches, parsePatch, resolvePatchArg } from "../machinery/config/patch/index.js";

export const configValidateCommand: Command = {
  name: "config validate",
  summary: "load and validate a machine config file, printing every problem with its YAML path",
  usage: "machined config validate FILE [--mode metal|container|local]",
  options: { mode: { type: "string", default: "metal" } },
  positionals: 1,
  async run(values, [file]) {
    const mode = String(values.mode);
    if (!["metal", "container", "local"].includes(mode)) throw new UsageError(`config validate: --mode must be metal, container or local, got "${mode}"`);
    const cfg = loadConfig(await files.readFile(file));
    const { warnings } = validateConfig(cfg, { mode: mode as "metal" | "container" | "local" });
    for (const w of [...cfg.warnings, ...warnings]) console.error(`WARNING: ${w}`);
    console.log(`${file} is valid for ${mode} mode`);
  },
};

export const configPatchCommand: Command = {
  name: "config patch",
  summary: "apply strategic-merge or RFC 6902 patches (@file or inline) to a machine config",
  usage: "machined config patch FILE --patch @PATCH [--patch ...] [-o OUT]",
  options: {
    patch: { type: "string", short: "p", multiple: true },
    "output": { type: "string", short: "o" },
  },
  positionals: 1,
  async run(values, [file]) {
    const args = (values.patch as string[] | undefined) ?? [];
    if (args.length === 0) throw new UsageError("config patch: at least one --patch is required");
    const patches = [];
    for (const a of args) {
      // resolvePatchArg decides whether the argument names a file; the file is then read here, asynchronously
      let named: string | undefined;
      const inline = resolvePatchArg(a, (p) => ((named = p), ""));
      patches.push(parsePatch(named === undefined ? inline : await files.readFile(named, "utf8")));
    }
    const out = applyPatches(await files.readFile(file, "utf8"), patches);
    const target = values.output as string | undefined;
    if (target) await files.writeFile(target, out);
    else process.stdout.write(out);
  },
};
