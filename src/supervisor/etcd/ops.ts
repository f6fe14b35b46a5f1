/**
 * The etcd maintenance RPCs with upstream semantics and error texts (server/v1alpha1 + internal/pkg/etcd).
 */
import { join } from "node:path";
import { hostFiles, type Files } from "../../host/files/index.js";
import { ApiError, Code } from "../../machinery/errors.js";
import { sleep } from "../health.js";
import type { EtcdClient } from "./client.js";

function wrap(prefix: string, e: unknown): Error {
  if (e instanceof ApiError) return new ApiError(e.code, `${prefix}: ${e.message}`);
  return new Error(`${prefix}: ${(e as Error).message}`);
}

/** Upstream prints member ids as 16-digit hex (etcd.FormatMemberID). */
export function formatMemberId(id: bigint): string {
  return id.toString(16).padStart(16, "0");
}

/**
 * Move leadership away from the local member. Returns the new leader's name, or "" when this member was
 * not the leader. A single-member cluster is an error, as upstream.
 */
export async function forfeitLeadership(c: EtcdClient): Promise<string> {
  try {
    const members = await c.memberList();
    if (members.length === 1) throw new Error("cannot forfeit leadership, only one member");
    const st = await c.status();
    const me = members.find((m) => m.id === st.memberId);
    if (!me) throw new Error(`failed to find ${JSON.stringify(formatMemberId(st.memberId))} in list of etcd members`);
    if (st.leader !== me.id) return "";
    const target = members.find((m) => m.id !== me.id && !m.isLearner) ?? members.find((m) => m.id !== me.id);
    if (!target) return "";
    try {
      await c.moveLeader(target.id);
    } catch (e) {
      // Someone else became leader meanwhile: nothing left to forfeit.
      if (e instanceof ApiError && /not leader/.test(e.message)) return "";
      throw e;
    }
    return target.hostname;
  } catch (e) {
    throw wrap("failed to forfeit leadership", e);
  }
}

export async function removeMemberById(c: EtcdClient, id: bigint): Promise<void> {
  try {
    await c.memberRemove(id, { requireLeader: true });
  } catch (e) {
    const msg = `failed to remove member ${id}: ${(e as Error).message}`;
    if (e instanceof ApiError && e.code === Code.NotFound) throw new ApiError(Code.NotFound, msg);
    throw new Error(`failed to remove member: ${msg}`);
  }
}

/**
 * Remove the local member from the cluster (retrying while etcd reports itself unhealthy or stopping; a member
 * already gone counts as removed), then let the caller stop the service, then clear the data directory's
 * contents: the data is useless once the member is gone, and the directory itself may be a mount point.
 * `cluster` should reach the other members: a member removing itself through itself may stop before it answers.
 */
export async function leaveCluster(
  cluster: EtcdClient,
  localMemberId: () => Promise<{ memberId: bigint }>,
  stopService: () => Promise<void>,
  dataDir: string,
  retryForMs = 5 * 60_000,
  files: Files = hostFiles,
): Promise<void> {
  let self: bigint;
  try {
    self = (await localMemberId()).memberId;
  } catch (e) {
    throw wrap("failed to get local etcd member ID", e);
  }
  const end = Date.now() + retryForMs;
  for (;;) {
    try {
      await cluster.memberRemove(self, { requireLeader: true });
      break;
    } catch (e) {
      if (e instanceof ApiError && e.code === Code.NotFound) break;
      const transient = /unhealthy|stopped/.test((e as Error).message);
      if (!transient || Date.now() > end) throw wrap("failed to leave cluster", wrap(`failed to remove member ${self}`, e));
      await sleep(1000, AbortSignal.timeout(retryForMs));
    }
  }
  await stopService();
  for (const entry of await files.readdir(dataDir).catch(() => [] as string[])) await files.rm(join(dataDir, entry), { recursive: true, force: true });
}
