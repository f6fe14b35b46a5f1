/**
 * Joining an existing etcd cluster, as upstream's etcd service does for a control plane with an empty data
 * directory that was not bootstrapped (svc/etcd.go addMember, buildInitialCluster, promoteMember):
 *
 * - through the other control planes (every merged control-plane Endpoints address on the client port, shuffled)
 *   list the members (requiring a leader), drop the member that carries this node's name (its own stale entry),
 *   add this node as a learner, list again; the initial cluster is every member's name=peerURL with the new,
 *   still nameless learner named after this node. Retried every 3 s (±1 s) for up to 30 min.
 * - once etcd runs, promote the learner: every 15 s for up to 10 min through each endpoint in turn (a learner
 *   cannot promote itself, and it cannot be promoted before it caught up with the leader).
 *
 * Where upstream would leave debris we clean up: an attempt that fails (or is cancelled, say by a bootstrap) after
 * adding its learner removes that learner again, and a nameless member with this node's peer URL (a learner
 * added by an attempt whose etcd never started) counts as this node's stale entry too.
 */
import { ApiError } from "../../machinery/errors.js";
import { sleep } from "../health.js";
import type { CallOptions, EtcdClient, EtcdMemberInfo } from "./client.js";
import { formatMemberId } from "./ops.js";

/** Upstream's timings (constants.EtcdJoinTimeout and the retry settings of svc/etcd.go). */
export interface JoinSettings {
  retryMs: number;
  jitterMs: number;
  timeoutMs: number;
  attemptTimeoutMs: number;
  /** How often the "waiting to join" message is repeated. */
  nagMs: number;
  promoteRetryMs: number;
  promoteTimeoutMs: number;
  promoteAttemptTimeoutMs: number;
}

export const defaultJoinSettings: JoinSettings = {
  retryMs: 3000,
  jitterMs: 1000,
  timeoutMs: 30 * 60_000,
  attemptTimeoutMs: 30_000,
  nagMs: 30_000,
  promoteRetryMs: 15_000,
  promoteTimeoutMs: 10 * 60_000,
  promoteAttemptTimeoutMs: 30_000,
};

export interface JoinEnv {
  /** This member's name (the short hostname) and peer URLs. */
  name: string;
  peerUrls: string[];
  /** The control planes' etcd client endpoints (host:port); read again at every attempt. */
  endpoints: () => string[];
  /** A client for these endpoints with this node's etcd client certificate (read again at every attempt). */
  client: (endpoints: string[]) => EtcdClient;
  /** Progress lines (the etcd service log). */
  log: (line: string) => void;
  /** What the operator should see among the service's events too (a stale member of this node's name replaced). */
  notice?: (msg: string) => void;
}

export interface JoinPlan {
  /** --initial-cluster for etcd. */
  initialCluster: string;
  /** The learner this node runs as until promoted. */
  learnerId: bigint;
}

/** Upstream's error when there is nobody to join yet. */
export const NO_ENDPOINTS = "no controlplane endpoints discovered yet";

/** The endpoints in random order, so that nodes do not all pick the same first one. */
export function shuffled<T>(list: readonly T[], random: () => number = Math.random): T[] {
  const out = [...list];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

const describe = (m: EtcdMemberInfo) => `${m.hostname ? JSON.stringify(m.hostname) : "unstarted member"} ${formatMemberId(m.id)} (${m.peerUrls.join(", ")})`;

function wrap(prefix: string, e: unknown): Error {
  if (e instanceof ApiError) return new ApiError(e.code, `${prefix}: ${e.message}`);
  return new Error(`${prefix}: ${(e as Error).message}`);
}

/** One join attempt: the member list to start etcd with and the learner's id. Leaves no learner behind on failure. */
export async function addMember(env: JoinEnv, signal: AbortSignal): Promise<JoinPlan> {
  const endpoints = shuffled(env.endpoints());
  if (endpoints.length === 0) throw new Error(NO_ENDPOINTS);
  const client = env.client(endpoints);
  const opts: CallOptions = { signal, requireLeader: true };
  try {
    let members: EtcdMemberInfo[];
    try {
      members = await client.memberList(opts);
    } catch (e) {
      throw wrap("error getting etcd member list", e);
    }
    // Only a node with an empty data directory joins, so a member of its name (or an unstarted one at its peer
    // URL) is its own entry from before (a reset without leaving, a crash mid-join): it would conflict with the new one.
    const own = new Set(env.peerUrls);
    for (const m of members) {
      const stale = m.hostname === env.name || (m.hostname === "" && m.peerUrls.some((u) => own.has(u)));
      if (!stale) continue;
      const what = `removing the stale etcd member ${describe(m)} that has this node's name`;
      env.log(what);
      env.notice?.(what);
      try {
        await client.memberRemove(m.id, opts);
      } catch (e) {
        throw wrap(`error removing self (stale member ${describe(m)}) from the member list`, e);
      }
    }
    let learner: EtcdMemberInfo;
    try {
      learner = (await client.memberAddAsLearner(env.peerUrls, opts)).member;
    } catch (e) {
      const clash = members.find((m) => m.hostname !== "" && m.hostname !== env.name && m.peerUrls.some((u) => own.has(u)));
      let hint = "";
      if (clash) hint = ` (member ${describe(clash)} already has this node's peer URL; remove it with \`talosctl etcd remove-member ${formatMemberId(clash.id)}\`)`;
      // etcd derives a new member's id from its peer URLs and the time in seconds: re-adding within the second
      // after a removal (the stale entry just dropped) meets the removed id.
      else if (e instanceof ApiError && /member not found/.test(e.message)) hint = " (a member with these peer URLs was removed less than a second ago)";
      throw wrap(`error adding member${hint}`, e);
    }
    env.log(`added this node to the etcd cluster as learner ${formatMemberId(learner.id)}`);
    try {
      members = await client.memberList(opts);
    } catch (e) {
      // Nobody would ever start this learner: take it out again so the cluster is as it was.
      const undo = await removeQuietly(client, learner.id);
      throw wrap(`error getting second etcd member list${undo}`, e);
    }
    if (signal.aborted) {
      // A cancelled attempt (bootstrap requested, service stopped, attempt timeout) leaves no learner behind either.
      await removeQuietly(client, learner.id);
      throw signal.reason;
    }
    return { initialCluster: initialCluster(members, learner.id, env.name), learnerId: learner.id };
  } finally {
    client.close();
  }
}

/** `name=peerURL` for every member; the just-added learner has no name yet and gets ours. */
export function initialCluster(members: EtcdMemberInfo[], learnerId: bigint, name: string): string {
  return members.flatMap((m) => m.peerUrls.map((u) => `${m.id === learnerId ? name : m.hostname}=${u}`)).join(",");
}

/** Best-effort removal on a fresh, short deadline (the attempt's own may be gone); says how it went. */
export async function removeQuietly(client: EtcdClient, id: bigint): Promise<string> {
  try {
    await client.memberRemove(id, { signal: AbortSignal.timeout(10_000) });
    return ` (the learner ${formatMemberId(id)} added by this attempt was removed again)`;
  } catch (e) {
    if (e instanceof ApiError && /member not found/.test(e.message)) return "";
    return ` (removing the learner ${formatMemberId(id)} added by this attempt failed too: ${(e as Error).message})`;
  }
}

export interface JoinProgress {
  /** Repeated every nagMs: upstream's waiting message. */
  waiting: () => void;
  /** Each failed attempt (the same error is reported once until it changes). */
  failed: (err: Error) => void;
}

/** Attempts addMember until one succeeds, the join timeout passes, or `signal` aborts. */
export async function buildInitialCluster(env: JoinEnv, signal: AbortSignal, progress: JoinProgress, settings: JoinSettings = defaultJoinSettings): Promise<JoinPlan> {
  const deadline = Date.now() + settings.timeoutMs;
  let lastNag = -Infinity;
  let last: Error | undefined;
  for (;;) {
    if (signal.aborted) throw signal.reason;
    if (Date.now() - lastNag >= settings.nagMs) {
      lastNag = Date.now();
      progress.waiting();
    }
    try {
      return await addMember(env, AbortSignal.any([signal, AbortSignal.timeout(settings.attemptTimeoutMs)]));
    } catch (e) {
      if (signal.aborted) throw signal.reason;
      const err = e instanceof Error ? e : new Error(String(e));
      env.log(`etcd join attempt failed: ${err.message}`);
      if (err.message !== last?.message) progress.failed(err);
      last = err;
    }
    const wait = settings.retryMs + (Math.random() * 2 - 1) * settings.jitterMs;
    if (Date.now() + wait > deadline) throw new Error(`failed to build cluster arguments: ${last?.message ?? "timeout"}`);
    if (!(await sleep(Math.max(0, wait), signal))) throw signal.reason;
  }
}

/**
 * Promotes the learner, through each endpoint in turn, until it succeeds or the promotion timeout passes. A
 * member that is already a voter (an earlier promotion whose answer got lost) counts as done.
 */
export async function promoteMember(env: JoinEnv, learnerId: bigint, signal: AbortSignal, settings: JoinSettings = defaultJoinSettings): Promise<void> {
  const deadline = Date.now() + settings.promoteTimeoutMs;
  let idx = 0;
  let last: Error | undefined;
  for (;;) {
    if (signal.aborted) throw signal.reason;
    const attempt = AbortSignal.any([signal, AbortSignal.timeout(settings.promoteAttemptTimeoutMs)]);
    const endpoints = env.endpoints();
    if (endpoints.length === 0) last = new Error(NO_ENDPOINTS);
    for (let i = 0; i < endpoints.length && !attempt.aborted; i++) {
      const endpoint = endpoints[idx++ % endpoints.length];
      const client = env.client([endpoint]);
      try {
        await client.memberPromote(learnerId, { signal: attempt });
        return;
      } catch (e) {
        // Already a voter: an earlier promotion went through but its answer was lost.
        if (e instanceof ApiError && e.message === "etcdserver: can only promote a learner member") return;
        last = wrap(`promoting through ${endpoint}`, e);
      } finally {
        client.close();
      }
    }
    if (signal.aborted) throw signal.reason;
    env.log(`etcd member promotion attempt failed: ${last?.message ?? "timeout"}`);
    const wait = settings.promoteRetryMs + (Math.random() * 2 - 1) * Math.min(settings.jitterMs, settings.promoteRetryMs / 2);
    if (Date.now() + wait > deadline) throw new Error(`failed promoting member: ${last?.message ?? "timeout"}`);
    if (!(await sleep(Math.max(0, wait), signal))) throw signal.reason;
  }
}
