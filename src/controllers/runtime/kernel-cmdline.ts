/**
 * runtime.KernelCmdlineController: KernelCmdline `cmdline`, the kernel command line this boot ran with (nothing
 * where the root has no /proc/cmdline, e.g. a test tree).
 */
import { readText } from "../../host/proc/fs.js";
import { KernelCmdlineType } from "../../machinery/resources/types/runtime-info.js";
import { RUNTIME_NS } from "../../machinery/resources/types/runtime.js";
import type { Controller } from "../../state/runtime/index.js";

export function kernelCmdlineController(opts: { root?: string } = {}): Controller {
  return {
    name: "runtime.KernelCmdlineController",
    inputs: [],
    outputs: [{ type: KernelCmdlineType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      const ptr = { namespace: RUNTIME_NS, type: KernelCmdlineType.type, id: "cmdline" };
      const text = await readText({ root: opts.root }, "proc/cmdline").catch((err: NodeJS.ErrnoException) => {
        if (err.code === "ENOENT") return undefined;
        throw err;
      });
      if (text === undefined) ctx.destroy(ptr);
      else ctx.apply({ ...ptr, spec: { cmdline: text.trim() } });
    },
  };
}
