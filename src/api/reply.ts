/**
 * Reply shaping. Unary replies are `{ messages: [ { metadata?, ...fields } ] }` with one entry for this node.
 * metadata stays unset except for a legacy `nodes` request, where talosctl ≤ 1.13 prints metadata.hostname
 * in its NODE column.
 */
import type { CallContext } from "./transport/context.js";

export function one<T extends object>(ctx: CallContext, msg: T): { messages: (T & { metadata?: { hostname: string } })[] } {
  return { messages: [withMetadata(ctx, msg)] };
}

export function withMetadata<T extends object>(ctx: CallContext, msg: T): T & { metadata?: { hostname: string } } {
  return ctx.echoHostname ? { ...msg, metadata: { hostname: ctx.echoHostname } } : msg;
}
