/**
 * Events: an empty "hello" event first (talosctl blocks on it), then the requested history, then live
 * events until the client goes away. Payloads travel as Any with type URL `talos/runtime/<full name>`.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import type { EventsRequest } from "../../machinery/api/gen/machine/machine_pb.js";
import { newXid, type MachineEvent } from "../../state/events.js";
import type { Handlers } from "../transport/service.js";
import type { ApiDeps } from "../deps.js";
import { withMetadata } from "../reply.js";

export function toWireEvent(e: MachineEvent) {
  return {
    id: e.id,
    actorId: e.actorId,
    data: { typeUrl: `talos/runtime/${e.schema.typeName}`, value: toBinary(e.schema, create(e.schema, e.payload)) },
  };
}

export function eventsHandlers(deps: ApiDeps): Handlers {
  return {
    Events: async (req: EventsRequest, send, ctx) => {
      const bus = deps.node.events;
      const actor = req.withActorId;
      const queue: MachineEvent[] = [];
      let wake: (() => void) | undefined;
      // Subscribe before reading history so nothing published in between is lost.
      const unsubscribe = bus.subscribe((e) => {
        if (actor && e.actorId !== actor) return;
        queue.push(e);
        wake?.();
      });
      try {
        await send(withMetadata(ctx, { id: newXid(), actorId: actor, data: { typeUrl: "", value: new Uint8Array() } }));
        const history = bus.tail({ tailEvents: req.tailEvents, tailId: req.tailId, tailSeconds: req.tailSeconds, actorId: actor });
        const seen = new Set(history.map((e) => e.id));
        for (const e of history) await send(withMetadata(ctx, toWireEvent(e)));
        while (!ctx.signal.aborted) {
          while (queue.length > 0) {
            const e = queue.shift()!;
            if (seen.has(e.id)) continue;
            await send(withMetadata(ctx, toWireEvent(e)));
          }
          await new Promise<void>((resolve) => {
            wake = resolve;
            ctx.signal.addEventListener("abort", () => resolve(), { once: true });
          });
          wake = undefined;
        }
      } finally {
        unsubscribe();
      }
    },
  };
}
