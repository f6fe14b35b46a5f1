/**
 * Glue between protobuf-es service descriptors and the grpc-js server: builds the grpc ServiceDefinition
 * (paths, codecs, streaming flags) from a GenService and adapts typed handlers to grpc-js callbacks.
 * Authorisation, node routing and error mapping happen here once, so handlers stay thin.
 */
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { DescMessage, DescMethod, DescService, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import { ApiError, Code } from "../../machinery/errors.js";
import type { CallContext, ContextFactory } from "./context.js";

export type Unary<I extends DescMessage, O extends DescMessage> = (
  req: MessageShape<I>,
  ctx: CallContext,
) => Promise<MessageInitShape<O>> | MessageInitShape<O>;

export type ServerStream<I extends DescMessage, O extends DescMessage> = (
  req: MessageShape<I>,
  send: (msg: MessageInitShape<O>) => Promise<void>,
  ctx: CallContext,
) => Promise<void>;

export type ClientStream<I extends DescMessage, O extends DescMessage> = (
  reqs: AsyncIterable<MessageShape<I>>,
  ctx: CallContext,
) => Promise<MessageInitShape<O>>;

/**
 * A handler of any kind. Handler groups annotate their request types (e.g. `req: ReadRequest`); the
 * method's kind decides how the transport calls it.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyHandler = (...args: any[]) => any;

/** Handlers keyed by the method's proto name (e.g. "ApplyConfiguration"). Missing ones answer Unimplemented. */
export type Handlers = Record<string, AnyHandler>;

export function methodPath(m: DescMethod): string {
  return `/${m.parent.typeName}/${m.name}`;
}

function serializer(schema: DescMessage) {
  return (msg: unknown) => Buffer.from(toBinary(schema, msg as MessageShape<DescMessage>));
}

function deserializer(schema: DescMessage) {
  return (buf: Buffer) => {
    try {
      return fromBinary(schema, buf);
    } catch (err) {
      throw new ApiError(Code.InvalidArgument, `malformed ${schema.typeName} message: ${(err as Error).message}`);
    }
  };
}

/** The status a call ends with for whatever its handler threw (any value, even one whose fields throw). */
export function toStatus(err: unknown): Partial<grpc.StatusObject> {
  try {
    if (err instanceof ApiError) return { code: err.code as number as grpc.status, details: err.message };
    const e = err as { code?: unknown; message?: unknown };
    const details = typeof e?.message === "string" ? e.message : String(err);
    if (typeof e?.code === "number" && e.code > 0 && e.code <= 16) return { code: e.code, details };
    return { code: grpc.status.INTERNAL, details };
  } catch {
    return { code: grpc.status.INTERNAL, details: "internal error" };
  }
}

/** Build the grpc-js definition + implementation for one service. */
export function bindService(
  service: DescService,
  handlers: Handlers,
  makeContext: ContextFactory,
): { definition: grpc.ServiceDefinition; implementation: grpc.UntypedServiceImplementation } {
  const definition: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  const implementation: grpc.UntypedServiceImplementation = {};
  for (const m of service.methods) {
    const path = methodPath(m);
    definition[m.name] = {
      path,
      requestStream: m.methodKind === "client_streaming" || m.methodKind === "bidi_streaming",
      responseStream: m.methodKind === "server_streaming" || m.methodKind === "bidi_streaming",
      requestSerialize: serializer(m.input),
      requestDeserialize: deserializer(m.input),
      responseSerialize: serializer(m.output),
      responseDeserialize: deserializer(m.output),
      originalName: m.localName,
    };
    implementation[m.name] = adapt(m, handlers[m.name], makeContext);
  }
  return { definition: definition as grpc.ServiceDefinition, implementation };
}

function unimplementedError(m: DescMethod): ApiError {
  return new ApiError(Code.Unimplemented, `method ${m.name} not implemented`);
}

function adapt(m: DescMethod, handler: AnyHandler | undefined, makeContext: ContextFactory): grpc.UntypedHandleCall {
  const path = methodPath(m);
  switch (m.methodKind) {
    case "unary":
      return (async (call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        try {
          const ctx = makeContext(path, call);
          if (!handler) throw unimplementedError(m);
          const out = await (handler as Unary<DescMessage, DescMessage>)(call.request as MessageShape<DescMessage>, ctx);
          cb(null, create(m.output, out));
        } catch (err) {
          cb(toStatus(err));
        }
      }) as grpc.handleUnaryCall<unknown, unknown>;
    case "server_streaming":
      return (async (call: grpc.ServerWritableStream<unknown, unknown>) => {
        try {
          const ctx = makeContext(path, call);
          if (!handler) throw unimplementedError(m);
          const send = (msg: MessageInitShape<DescMessage>) => writeWithBackpressure(call, create(m.output, msg));
          await (handler as ServerStream<DescMessage, DescMessage>)(call.request as MessageShape<DescMessage>, send, ctx);
          if (!call.cancelled) call.end();
        } catch (err) {
          if (call.cancelled) return;
          call.emit("error", toStatus(err));
        }
      }) as grpc.handleServerStreamingCall<unknown, unknown>;
    case "client_streaming":
      return (async (call: grpc.ServerReadableStream<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        try {
          const ctx = makeContext(path, call);
          if (!handler) throw unimplementedError(m);
          const out = await (handler as ClientStream<DescMessage, DescMessage>)(
            call as unknown as AsyncIterable<MessageShape<DescMessage>>,
            ctx,
          );
          cb(null, create(m.output, out));
        } catch (err) {
          cb(toStatus(err));
        }
      }) as grpc.handleClientStreamingCall<unknown, unknown>;
    default:
      return ((call: grpc.ServerDuplexStream<unknown, unknown>) => {
        call.emit("error", toStatus(unimplementedError(m)));
      }) as grpc.handleBidiStreamingCall<unknown, unknown>;
  }
}

/** Resolve once the message is flushed or buffered below the high-water mark; reject if the call ended. */
function writeWithBackpressure(call: grpc.ServerWritableStream<unknown, unknown>, msg: unknown): Promise<void> {
  if (call.cancelled || call.destroyed) return Promise.reject(new ApiError(Code.Canceled, "call cancelled"));
  const ok = call.write(msg);
  if (ok) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onDrain = () => {
      cleanup();
      resolve();
    };
    const onClose = () => {
      cleanup();
      reject(new ApiError(Code.Canceled, "call cancelled"));
    };
    const cleanup = () => {
      call.off("drain", onDrain);
      call.off("cancelled", onClose);
      call.off("close", onClose);
    };
    call.on("drain", onDrain);
    call.on("cancelled", onClose);
    call.on("close", onClose);
  });
}
