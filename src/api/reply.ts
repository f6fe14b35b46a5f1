/**
 * Reply shaping. Unary replies are `{ messages: [ { metadata?, ...fields } ] }` with one entry for this node.
 * metadata stays unset except for a legacy `nodes` request, where talosctl ≤ 1.13 prints metadata.hostname
 * in its NODE column.
 */
import type { CallContext } from "./transport/context.js";
import { Code, type ApiError } from "../machinery/errors.js";

export function one<T extends object>(ctx: CallContext, msg: T): { messages: (T & { metadata?: { hostname: string } })[] } {
  return { messages: [withMetadata(ctx, msg)] };
}

export function withMetadata<T extends object>(ctx: CallContext, msg: T): T & { metadata?: { hostname: string } } {
  return ctx.echoHostname ? { ...msg, metadata: { hostname: ctx.echoHostname } } : msg;
}

/**
 * A streaming call that fails for this node. Behind upstream's apid, a one-to-many (`nodes`) stream reports a
 * node's failure as one message carrying metadata.error (Go's `rpc error: code = X desc = ...`) and ends normally,
 * which is what talosctl prints as `ERROR: ...`; a direct call just fails with the error.
 */
export async function failStream(ctx: CallContext, err: ApiError, send: (msg: { metadata: StreamErrorMetadata }) => Promise<void>): Promise<void> {
  if (!ctx.echoHostname) throw err;
  const error = `rpc error: code = ${Code[err.code]} desc = ${err.message}`;
  await send({ metadata: { hostname: ctx.echoHostname, error, status: { code: err.code, message: err.message } } });
}

export interface StreamErrorMetadata {
  hostname: string;
  error: string;
  status: { code: number; message: string };
}
