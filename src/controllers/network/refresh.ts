/**
 * After an apply controller changed the kernel it bumps its own LinkRefresh resource (upstream's
 * "look at the links again" signal); the status controllers watch that kind, so they re-observe at once
 * instead of at the next poll.
 */
import type { ReconcileContext } from "../../state/runtime/index.js";
import { LinkRefreshType, type LinkRefreshSpec } from "../../machinery/resources/types/network.js";
import { pointer, readSpec } from "../../machinery/resources/read.js";

export const refreshOutput = { type: LinkRefreshType.type, kind: "shared" } as const;

export function bumpRefresh(ctx: ReconcileContext, id: string): void {
  const ptr = pointer(LinkRefreshType, id);
  const cur = readSpec(ctx, LinkRefreshType, id);
  ctx.apply({ ...ptr, spec: { generation: (cur?.generation ?? 0) + 1 } satisfies LinkRefreshSpec });
}
