/**
 * One log line per API call, as upstream's gRPC logging middleware writes it in both apid and machined:
 * `<code> [<method>] <duration> <unary|stream> <Success|error> (<metadata>)`. `talosctl logs apid --tail 5` and
 * `logs machined -f` show API activity this way, and upstream's log tests rely on every call adding a line.
 */
import type { DescService } from "@bufbuild/protobuf";
import { Code } from "../machinery/errors.js";
import type { CallContext } from "./transport/context.js";
import { toStatus, type AnyHandler, type Handlers } from "./transport/service.js";

export interface RequestRecord {
  /** Full method path, e.g. `/machine.MachineService/Version`. */
  method: string;
  kind: "unary" | "stream";
  code: Code;
  /** "Success", or Go's `rpc error: code = X desc = ...`. */
  message: string;
  durationMs: number;
  /** Incoming metadata as upstream prints it: sorted `key=value` pairs joined by `;`, the token hidden. */
  metadata: string;
}

/** Metadata keys whose values are never written to a log. */
const HIDDEN = new Set(["token"]);

export function metadataText(md: CallContext["metadata"] | undefined): string {
  if (!md) return "";
  const map = md.toJSON() as Record<string, (string | Buffer)[]>;
  return Object.keys(map)
    .sort()
    .map((k) => `${k}=${HIDDEN.has(k) ? "<hidden>" : map[k].map(String).join(",")}`)
    .join(";");
}

/** Go's time.Duration String() for a duration in milliseconds (e.g. `1.234567ms`, `850.2µs`, `1m2.5s`). */
export function goDuration(ms: number): string {
  const ns = Math.round(ms * 1e6);
  if (ns === 0) return "0s";
  const trim = (v: number, digits: number) => v.toFixed(digits).replace(/\.?0+$/, "");
  if (ns < 1e3) return `${ns}ns`;
  if (ns < 1e6) return `${trim(ns / 1e3, 3)}µs`;
  if (ns < 1e9) return `${trim(ns / 1e6, 6)}ms`;
  const h = Math.floor(ns / 3.6e12);
  const m = Math.floor((ns % 3.6e12) / 6e10);
  const s = trim((ns % 6e10) / 1e9, 9);
  if (h > 0) return `${h}h${m}m${s}s`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}

export function formatRequest(r: RequestRecord): string {
  return `${Code[r.code] ?? r.code} [${r.method}] ${goDuration(r.durationMs)} ${r.kind} ${r.message} (${r.metadata})`;
}

/**
 * Wraps every handler of every service so that each finished call is handed to `sink`. Handlers keep their
 * behaviour (results and errors pass through unchanged); a failing sink never fails the call.
 */
export function logRequests(services: Map<DescService, Handlers>, sink: (r: RequestRecord) => void): Map<DescService, Handlers> {
  const out = new Map<DescService, Handlers>();
  for (const [svc, handlers] of services) {
    const wrapped: Handlers = {};
    for (const [name, handler] of Object.entries(handlers)) {
      const m = svc.methods.find((x) => x.name === name);
      if (!m) {
        wrapped[name] = handler;
        continue;
      }
      const method = `/${svc.typeName}/${m.name}`;
      const kind = m.methodKind === "unary" || m.methodKind === "client_streaming" ? "unary" : "stream";
      // The call context is the last argument for every method kind (unary: req, ctx; stream: req, send, ctx).
      const ctxIndex = m.methodKind === "server_streaming" ? 2 : 1;
      wrapped[name] = wrap(handler, (args, started, err) => {
        const ctx = args[ctxIndex] as CallContext | undefined;
        const status = err === undefined ? undefined : toStatus(err);
        const code = (status?.code as number | undefined) ?? Code.OK;
        const record: RequestRecord = {
          method,
          kind,
          code,
          message: status ? `rpc error: code = ${Code[code] ?? code} desc = ${status.details ?? ""}` : "Success",
          durationMs: performance.now() - started,
          metadata: metadataText(ctx?.metadata),
        };
        try {
          sink(record);
        } catch {
          // Logging must not change the outcome of a call.
        }
      });
    }
    out.set(svc, wrapped);
  }
  return out;
}

function wrap(handler: AnyHandler, done: (args: unknown[], started: number, err: unknown) => void): AnyHandler {
  return async (...args: unknown[]) => {
    const started = performance.now();
    try {
      const res = await handler(...args);
      done(args, started, undefined);
      return res;
    } catch (err) {
      done(args, started, err);
      throw err;
    }
  };
}
