/**
 * runtime.KernelParamSpecController (a node that owns its kernel: PID 1, or the sandbox for the keys of its own
 * network namespace): writes every KernelParamDefaultSpec and KernelParamSpec (the config's win) into /proc/sys and
 * reports KernelParamStatuses — the current value, the value before machined changed it, and whether the key
 * exists. A key the node may not change (the host's, in a sandbox) is left alone and reported as it is.
 */
import { kernelParamId, KernelParamDefaultSpecType, KernelParamSpecType, KernelParamStatusType, type KernelParamSpec } from "../../machinery/resources/types/kernel.js";
import { readAll, read } from "../../machinery/resources/read.js";
import type { Sysctls } from "../../host/sysctl.js";
import type { Controller } from "../../state/runtime/index.js";

export interface KernelParamSpecOptions {
  sysctls: Sysctls;
  /** Which keys this node may write (default: all — PID 1). */
  writable?: (key: string) => boolean;
}

export function kernelParamSpecController(o: KernelParamSpecOptions): Controller {
  const original = new Map<string, string>();
  return {
    name: "runtime.KernelParamSpecController",
    inputs: [
      { namespace: "runtime", type: KernelParamDefaultSpecType.type, kind: "weak" },
      { namespace: "runtime", type: KernelParamSpecType.type, kind: "weak" },
    ],
    outputs: [{ type: KernelParamStatusType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      const want = new Map<string, KernelParamSpec>();
      for (const r of readAll(ctx, KernelParamDefaultSpecType)) want.set(r.metadata.id, r.spec);
      for (const r of readAll(ctx, KernelParamSpecType)) want.set(r.metadata.id, r.spec);
      const errors: string[] = [];
      for (const [id, spec] of want) {
        const key = id.replace(/^proc\.sys\./, "");
        const current = await o.sysctls.read(key);
        if (current === undefined) {
          ctx.apply({ namespace: "runtime", type: KernelParamStatusType.type, id, spec: { current: "", default: "", unsupported: true } });
          if (!spec.ignoreErrors) errors.push(`${key}: no such kernel parameter`);
          continue;
        }
        if (!original.has(id)) original.set(id, current);
        let now = current;
        if (current !== spec.value && (o.writable?.(key) ?? true)) {
          try {
            await o.sysctls.write(key, spec.value);
            now = (await o.sysctls.read(key)) ?? spec.value;
          } catch (err) {
            if (!spec.ignoreErrors) errors.push(`${key}: ${(err as Error).message}`);
          }
        }
        const prev = read(ctx, KernelParamStatusType, id);
        ctx.apply({ namespace: "runtime", type: KernelParamStatusType.type, id, spec: { current: now, default: prev?.spec.default || (original.get(id) ?? current), unsupported: false } });
      }
      ctx.cleanup("runtime", KernelParamStatusType.type, [...want.keys()].map((id) => kernelParamId(id)));
      if (errors.length) throw new Error(`kernel parameters not applied: ${errors.join("; ")}`);
    },
  };
}
