/**
 * runtime.MetaKeyController: one MetaKey per tag stored in the META partition (id `0x%02x`). Talos
 * loads these in machined itself; here the reader is injected (boot/meta.ts on a real disk) and is
 * empty in local mode, which has no META partition. Call `refresh()` after META is written.
 */
import { MetaKeyType } from "../../machinery/resources/types/block.js";
import { RUNTIME_NS } from "../../machinery/resources/types/runtime.js";
import type { Controller } from "../../state/runtime/index.js";

export type MetaReader = () => Promise<Iterable<[tag: number, value: string]>>;

export interface MetaKeyOptions {
  read?: MetaReader;
  /** Re-read period; 0 disables polling. Default 0 (META changes only through this agent). */
  refreshMs?: number;
}

export function metaKeyId(tag: number): string {
  return `0x${tag.toString(16).padStart(2, "0")}`;
}

export function metaKeyController(opts: MetaKeyOptions = {}): Controller {
  const read: MetaReader = opts.read ?? (async () => []);
  return {
    name: "runtime.MetaKeyController",
    inputs: [],
    outputs: [{ type: MetaKeyType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      const keep: string[] = [];
      for (const [tag, value] of await read()) {
        const id = metaKeyId(tag);
        ctx.apply({ namespace: RUNTIME_NS, type: MetaKeyType.type, id, spec: { value } });
        keep.push(id);
      }
      ctx.cleanup(RUNTIME_NS, MetaKeyType.type, keep);
      return opts.refreshMs ? { requeueAfterMs: opts.refreshMs } : undefined;
    },
  };
}
