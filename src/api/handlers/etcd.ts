/**
 * Bootstrap and the etcd APIs. Each checks the machine type first with upstream's API name (the text of
 * the Unimplemented error), then talks to the local member through the etcd service.
 */
import type { Data } from "../../machinery/api/gen/common/common_pb.js";
import { EtcdMemberAlarm_AlarmType, type BootstrapRequest, type EtcdRemoveMemberByIDRequest } from "../../machinery/api/gen/machine/machine_pb.js";
import { ApiError, Code, failedPrecondition, invalidArgument } from "../../machinery/errors.js";
import type { EtcdAlarmInfo, EtcdService } from "../../supervisor/index.js";
import { hostFiles, writeFileAtomic } from "../../host/files/index.js";
import type { Handlers } from "../transport/service.js";
import type { CallContext } from "../transport/context.js";
import type { ApiDeps } from "../deps.js";
import { requireControlPlane } from "../guards.js";
import { one, withMetadata } from "../reply.js";

const alarms = (list: EtcdAlarmInfo[]) => list.map((a) => ({ memberId: a.memberId, alarm: EtcdMemberAlarm_AlarmType[a.alarm] }));

export function etcdHandlers(deps: ApiDeps): Handlers {
  /** The machine-type check, then the loaded etcd service. */
  const etcd = (apiName: string): EtcdService => {
    requireControlPlane(deps, apiName);
    const svc = deps.services?.etcd;
    if (!svc) throw new ApiError(Code.Unavailable, "etcd is not running on this node");
    return svc;
  };
  const sup = () => deps.services!.supervisor;

  return {
    Bootstrap: async (req: BootstrapRequest, ctx: CallContext) => {
      deps.log.info("bootstrap request received");
      requireControlPlane(deps, "bootstrap");
      if (!deps.node.activeConfig?.cluster?.etcd?.ca) throw invalidArgument("etcd is not configured, bootstrap is not possible");
      const svc = deps.services?.etcd;
      if (!svc) throw failedPrecondition("bootstrap is not available yet");
      await svc.bootstrap(sup(), {
        machineType: deps.node.activeConfig.machineType(),
        recover: req.recoverEtcd,
        skipHashCheck: req.recoverSkipHashCheck,
      });
      return one(ctx, {});
    },

    EtcdMemberList: async (_req, ctx: CallContext) => {
      const members = await etcd("member list").memberList();
      return one(ctx, {
        legacyMembers: members.map((m) => m.hostname),
        members: members.map((m) => ({ id: m.id, hostname: m.hostname, peerUrls: m.peerUrls, clientUrls: m.clientUrls, isLearner: m.isLearner })),
      });
    },

    EtcdStatus: async (_req, ctx: CallContext) => one(ctx, { memberStatus: await etcd("etcd status").status() }),
    EtcdAlarmList: async (_req, ctx: CallContext) => one(ctx, { memberAlarms: alarms(await etcd("etcd alarm list").alarmList()) }),
    EtcdAlarmDisarm: async (_req, ctx: CallContext) => one(ctx, { memberAlarms: alarms(await etcd("etcd alarm disarm").alarmDisarm()) }),

    EtcdDefragment: async (_req, ctx: CallContext) => {
      await etcd("etcd defragment").defragment();
      return one(ctx, {});
    },
    EtcdForfeitLeadership: async (_req, ctx: CallContext) => one(ctx, { member: await etcd("etcd forfeit leadership").forfeitLeadership() }),
    EtcdLeaveCluster: async (_req, ctx: CallContext) => {
      await etcd("etcd leave").leaveCluster(sup());
      return one(ctx, {});
    },
    EtcdRemoveMemberByID: async (req: EtcdRemoveMemberByIDRequest, ctx: CallContext) => {
      await etcd("etcd remove member").removeMemberById(req.memberId);
      return one(ctx, {});
    },

    EtcdSnapshot: async (_req, send, ctx: CallContext) => {
      const svc = etcd("etcd snapshot");
      let sent = false;
      try {
        for await (const chunk of svc.snapshot(ctx.signal)) {
          sent = true;
          await send(withMetadata(ctx, { bytes: chunk }));
        }
      } catch (err) {
        if (ctx.signal.aborted) return;
        if (sent) throw err;
        const e = err as ApiError;
        throw new ApiError(e.code ?? Code.Unknown, `failed reading etcd snapshot: ${e.message}`);
      }
    },

    /** The upload for `talosctl bootstrap --recover-from`; Bootstrap with recover_etcd restores it. */
    EtcdRecover: async (reqs: AsyncIterable<Data>, ctx: CallContext) => {
      requireControlPlane(deps, "etcd recover");
      const svc = deps.services?.etcd;
      if (!svc) throw failedPrecondition("etcd service is not ready for recovery yet");
      // replaced atomically once complete, so a broken upload never looks like a snapshot
      const bytes = (async function* () {
        for await (const msg of reqs) yield msg.bytes;
      })();
      try {
        await writeFileAtomic(deps.files ?? hostFiles, svc.recoverySnapshotPath, bytes, 0o600);
      } catch (err) {
        throw new Error(`error writing snapshot: ${(err as Error).message}`);
      }
      return one(ctx, {});
    },
  };
}
