/**
 * /cosi.resource.State: Get, List and Watch over the resource store, exactly as talosctl expects them
 * (both spec encodings, an empty first Watch reply, tombstones, BOOTSTRAPPED). Writes are refused.
 * Only registered types and namespaces are served; sensitive types need os:admin.
 *
 * A resource version is encoded once (YAML and proto spec, then the whole `Resource` message to bytes)
 * and those bytes are reused by every Get, List and Watch reply that carries it until the version is
 * gone: the reply messages hold them as an already-encoded field (protobuf-es writes `$unknown` fields
 * verbatim), so a List costs what its sends cost and an event to many watchers is encoded once.
 */
import { create, toBinary, type Message } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import {
  EventSchema,
  GetResponseSchema,
  ListResponseSchema,
  WatchResponseSchema,
  type GetRequest,
  type ListRequest,
  type WatchRequest,
} from "../../machinery/api/gen/cosi/state_pb.js";
import { ResourceSchema, type LabelQuery } from "../../machinery/api/gen/cosi/resource_pb.js";
import { EventType as WireEventType } from "../../machinery/api/gen/cosi/state_pb.js";
import { LabelTerm_Operation as Op } from "../../machinery/api/gen/cosi/resource_pb.js";
import { ApiError, Code, invalidArgument, notFound, permissionDenied, unimplemented } from "../../machinery/errors.js";
import { Role } from "../../machinery/role.js";
import type { Resource, ResourceType } from "../../machinery/resources/resource.js";
import { specYaml } from "../../machinery/resources/render.js";
import type { LabelTerm, WatchEvent } from "../../state/types.js";
import { versionKey } from "../../state/versions.js";
import type { Handlers } from "../transport/service.js";
import type { CallContext } from "../transport/context.js";
import type { ApiDeps } from "../deps.js";

const ts = (d: Date) => ({ seconds: BigInt(Math.floor(d.getTime() / 1000)), nanos: (d.getTime() % 1000) * 1e6 });

function wireInit(r: Resource, t: ResourceType | undefined, tombstone: boolean) {
  const m = r.metadata;
  return {
    metadata: {
      namespace: m.namespace,
      type: m.type,
      id: m.id,
      version: tombstone || m.version === 0 ? "undefined" : String(m.version),
      owner: tombstone ? "" : m.owner,
      phase: m.phase,
      created: tombstone ? undefined : ts(m.created),
      updated: tombstone ? undefined : ts(m.updated),
      finalizers: tombstone ? [] : m.finalizers,
      labels: tombstone ? {} : m.labels,
      annotations: tombstone ? {} : m.annotations,
    },
    spec: tombstone || !t ? {} : { protoSpec: t.toProto(r.spec), yamlSpec: specYaml(t, r.spec) },
  };
}

/** A `Resource` message as the value of a length-delimited field: its length, then its bytes. */
function encode(r: Resource, t: ResourceType | undefined, tombstone: boolean): Uint8Array {
  return new BinaryWriter().bytes(toBinary(ResourceSchema, create(ResourceSchema, wireInit(r, t, tombstone)))).finish();
}

/** Encoded resources by stored version (see versionKey); the type is kept to never mix encoders. */
const encoded = new WeakMap<object, { t: ResourceType; field: Uint8Array }>();

/** The encoded `Resource` field for `r`: computed once per stored version, then shared (never mutated). */
export function resourceField(r: Resource, t: ResourceType | undefined, tombstone = false): Uint8Array {
  if (tombstone || !t) return encode(r, t, tombstone);
  const key = versionKey(r);
  const hit = key ? encoded.get(key) : undefined;
  if (hit && hit.t === t) return hit.field;
  const field = encode(r, t, false);
  if (key) encoded.set(key, { t, field });
  return field;
}

/** `msg` with already-encoded message fields (field number → encoded value) that its encoder copies as they are. */
function carrying<M extends Message>(msg: M, fields: Array<[number, Uint8Array | undefined]>): M {
  msg.$unknown = fields.filter((f): f is [number, Uint8Array] => f[1] !== undefined).map(([no, data]) => ({ no, wireType: WireType.LengthDelimited, data }));
  return msg;
}

// Field numbers of the Resource-typed fields (cosi/state.proto), and of WatchResponse.event.
const GET_RESOURCE = 1;
const LIST_RESOURCE = 1;
const EVENT_RESOURCE = 1;
const EVENT_OLD = 3;
const WATCH_EVENT = 1;

/** The last event encoded for a resource version: every watcher of a kind gets the same one. */
const encodedEvents = new WeakMap<object, { t: ResourceType; type: WatchEvent["type"]; old?: object; error?: string; field: Uint8Array }>();

/** An `Event` as the value of a length-delimited field, encoded once per (event, resource version). */
function eventField(e: WatchEvent, t: ResourceType): Uint8Array {
  const tombstone = e.type === "bootstrapped" || e.resource.metadata.version === 0;
  const key = tombstone ? undefined : versionKey(e.resource);
  const old = e.old ? versionKey(e.old) : undefined;
  const cacheable = key !== undefined && (e.old === undefined || old !== undefined);
  const hit = cacheable ? encodedEvents.get(key) : undefined;
  if (hit && hit.t === t && hit.type === e.type && hit.old === old && hit.error === e.error) return hit.field;
  const msg = carrying(create(EventSchema, { eventType: wireType[e.type], error: e.error }), [
    [EVENT_RESOURCE, resourceField(e.resource, t, tombstone)],
    [EVENT_OLD, e.old ? resourceField(e.old, t) : undefined],
  ]);
  const field = new BinaryWriter().bytes(toBinary(EventSchema, msg)).finish();
  if (cacheable) encodedEvents.set(key, { t, type: e.type, old, error: e.error, field });
  return field;
}

function checkAccess(deps: ApiDeps, ctx: CallContext, namespace: string, type: string): ResourceType {
  const t = deps.types.get(type);
  if (!t) throw permissionDenied(`resource type ${JSON.stringify(type)} is not supported`);
  if (!deps.types.hasNamespace(namespace)) throw permissionDenied(`namespace ${JSON.stringify(namespace)} is not supported`);
  if (t.sensitive && !ctx.roles.has(Role.Admin)) throw permissionDenied();
  return t;
}

const opNames: Partial<Record<Op, LabelTerm["op"]>> = {
  [Op.EXISTS]: "exists",
  [Op.EQUAL]: "equal",
  [Op.IN]: "in",
  [Op.LT]: "lt",
  [Op.LTE]: "lte",
  [Op.LT_NUMERIC]: "ltNumeric",
  [Op.LTE_NUMERIC]: "lteNumeric",
};

function labelTerms(queries: LabelQuery[]): LabelTerm[] {
  const terms: LabelTerm[] = [];
  for (const q of queries) {
    for (const t of q.terms) {
      if (t.op === Op.NOT_EXISTS) {
        terms.push({ key: t.key, op: "exists", values: [], invert: !t.invert });
        continue;
      }
      const op = opNames[t.op as Op];
      if (!op) throw invalidArgument(`unsupported label query operation ${t.op}`);
      terms.push({ key: t.key, op, values: t.value, invert: t.invert });
    }
  }
  return terms;
}

function idRegexp(q: { regexp: string } | undefined): RegExp | undefined {
  if (!q || q.regexp === "") return undefined;
  try {
    return new RegExp(q.regexp);
  } catch (err) {
    throw invalidArgument(`invalid id query regexp ${JSON.stringify(q.regexp)}: ${(err as Error).message}`);
  }
}

const wireType: Record<WatchEvent["type"], WireEventType> = {
  created: WireEventType.CREATED,
  updated: WireEventType.UPDATED,
  destroyed: WireEventType.DESTROYED,
  bootstrapped: WireEventType.BOOTSTRAPPED,
  errored: WireEventType.ERRORED,
  noop: WireEventType.NOOP,
};

export function cosiHandlers(deps: ApiDeps): Handlers {
  const denyWrite = async () => {
    throw permissionDenied("write access is not allowed");
  };
  return {
    Get: async (req: GetRequest, ctx: CallContext) => {
      const t = checkAccess(deps, ctx, req.namespace, req.type);
      const r = deps.state.get({ namespace: req.namespace, type: req.type, id: req.id });
      if (!r) throw notFound(`resource ${req.type}(${req.namespace}/${req.id}@undefined) doesn't exist`);
      return carrying(create(GetResponseSchema), [[GET_RESOURCE, resourceField(r, t)]]);
    },

    List: async (req: ListRequest, send, ctx: CallContext) => {
      const t = checkAccess(deps, ctx, req.namespace, req.type);
      // Read-only: the resources are only encoded (once per version), never changed.
      const list = deps.state.list(req.namespace, req.type, {
        labels: labelTerms(req.options?.labelQuery ?? []),
        idRegexp: idRegexp(req.options?.idQuery),
        readOnly: true,
      });
      for (const r of list) await send(carrying(create(ListResponseSchema), [[LIST_RESOURCE, resourceField(r, t)]]));
    },

    Watch: async (req: WatchRequest, send, ctx: CallContext) => {
      const t = checkAccess(deps, ctx, req.namespace, req.type);
      const o = req.options;
      const single = req.id !== undefined;
      if (single && (o?.bootstrapContents || (o?.labelQuery.length ?? 0) > 0)) {
        throw unimplemented("bootstrap contents and label queries are not supported for single resource watch");
      }
      if (o?.bootstrapContents && (o.tailEvents ?? 0) > 0) {
        throw invalidArgument("tail events and bootstrap contents are mutually exclusive");
      }
      if (o?.startFromBookmark !== undefined && o.startFromBookmark.length > 0) {
        throw new ApiError(Code.FailedPrecondition, "invalid bookmark: bookmarks are not supported by this node");
      }
      const legacy = req.apiVersion === 0;
      const queue: WatchEvent[] = [];
      let wake: (() => void) | undefined;
      const push = (e: WatchEvent) => {
        queue.push(e);
        wake?.();
      };
      await send({ event: [] });
      const unsubscribe = single
        ? deps.state.watch({ namespace: req.namespace, type: req.type, id: req.id! }, push, { readOnly: true })
        : deps.state.watchKind(
            req.namespace,
            req.type,
            {
              bootstrapContents: o?.bootstrapContents,
              tailEvents: o?.tailEvents,
              labels: labelTerms(o?.labelQuery ?? []),
              idRegexp: idRegexp(o?.idQuery),
              readOnly: true,
            },
            push,
          );
      // One abort listener for the whole call (not one per wait): it only has to end the current wait.
      const onAbort = () => wake?.();
      ctx.signal.addEventListener("abort", onAbort, { once: true });
      try {
        while (!ctx.signal.aborted) {
          const batch = queue.splice(0).filter((e) => !(legacy && (e.type === "bootstrapped" || e.type === "errored" || e.type === "noop")));
          const events = batch.map((e) => eventField(e, t));
          const reply = (fields: Uint8Array[]) => carrying(create(WatchResponseSchema), fields.map((f) => [WATCH_EVENT, f] as [number, Uint8Array]));
          if (o?.aggregated) {
            if (events.length) await send(reply(events));
          } else {
            for (const ev of events) await send(reply([ev]));
          }
          if (batch.some((e) => e.type === "errored")) return;
          await new Promise<void>((resolve) => {
            wake = resolve;
            if (queue.length || ctx.signal.aborted) resolve();
          });
          wake = undefined;
        }
      } finally {
        ctx.signal.removeEventListener("abort", onAbort);
        unsubscribe();
      }
    },

    Create: denyWrite,
    Update: denyWrite,
    Destroy: denyWrite,
    Teardown: denyWrite,
    TeardownAndDestroy: denyWrite,
  };
}
