/**
 * /cosi.resource.State: Get, List and Watch over the resource store, exactly as talosctl expects them
 * (both spec encodings, an empty first Watch reply, tombstones, BOOTSTRAPPED). Writes are refused.
 * Only registered types and namespaces are served; sensitive types need os:admin.
 */
import type { GetRequest, ListRequest, WatchRequest } from "../../machinery/api/gen/cosi/state_pb.js";
import type { LabelQuery } from "../../machinery/api/gen/cosi/resource_pb.js";
import { EventType as WireEventType } from "../../machinery/api/gen/cosi/state_pb.js";
import { LabelTerm_Operation as Op } from "../../machinery/api/gen/cosi/resource_pb.js";
import { ApiError, Code, invalidArgument, notFound, permissionDenied, unimplemented } from "../../machinery/errors.js";
import { Role } from "../../machinery/role.js";
import type { Resource, ResourceType } from "../../machinery/resources/resource.js";
import { specYaml } from "../../machinery/resources/render.js";
import type { LabelTerm, WatchEvent } from "../../state/types.js";
import type { Handlers } from "../transport/service.js";
import type { CallContext } from "../transport/context.js";
import type { ApiDeps } from "../deps.js";

const ts = (d: Date) => ({ seconds: BigInt(Math.floor(d.getTime() / 1000)), nanos: (d.getTime() % 1000) * 1e6 });

export function toWireResource(r: Resource, t: ResourceType | undefined, tombstone = false) {
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
      return { resource: toWireResource(r, t) };
    },

    List: async (req: ListRequest, send, ctx: CallContext) => {
      const t = checkAccess(deps, ctx, req.namespace, req.type);
      const list = deps.state.list(req.namespace, req.type, {
        labels: labelTerms(req.options?.labelQuery ?? []),
        idRegexp: idRegexp(req.options?.idQuery),
      });
      for (const r of list) await send({ resource: toWireResource(r, t) });
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
        ? deps.state.watch({ namespace: req.namespace, type: req.type, id: req.id! }, push)
        : deps.state.watchKind(
            req.namespace,
            req.type,
            {
              bootstrapContents: o?.bootstrapContents,
              tailEvents: o?.tailEvents,
              labels: labelTerms(o?.labelQuery ?? []),
              idRegexp: idRegexp(o?.idQuery),
            },
            push,
          );
      try {
        while (!ctx.signal.aborted) {
          const batch = queue.splice(0).filter((e) => !(legacy && (e.type === "bootstrapped" || e.type === "errored" || e.type === "noop")));
          const wire = batch.map((e) => ({
            eventType: wireType[e.type],
            resource: toWireResource(e.resource, t, e.type === "bootstrapped" || e.resource.metadata.version === 0),
            old: e.old ? toWireResource(e.old, t) : undefined,
            error: e.error,
          }));
          if (o?.aggregated) {
            if (wire.length) await send({ event: wire });
          } else {
            for (const w of wire) await send({ event: [w] });
          }
          if (batch.some((e) => e.type === "errored")) return;
          await new Promise<void>((resolve) => {
            wake = resolve;
            ctx.signal.addEventListener("abort", () => resolve(), { once: true });
            if (queue.length) resolve();
          });
          wake = undefined;
        }
      } finally {
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
