/**
 * An etcd mutex held for the length of a function (upstream internal/pkg/etcd.WithLock): a session lease (60 s
 * TTL, kept alive every third of it), etcd's v3lock service on that lease (the key `<name>/<lease hex>`, the
 * same keys clientv3/concurrency.Mutex makes, so machined and Talos nodes queue on one lock), then the function,
 * then the lease revoked. Revoking the lease, not unlocking the key, releases it: the key hangs off the lease,
 * so it goes whatever the client believes about a lock request whose answer was lost. The revoke runs on its own
 * 10 s deadline, since the caller's signal is usually what ended the wait.
 */
import type { EtcdClient } from "./client.js";

export interface LockOptions {
  signal?: AbortSignal;
  /** Session TTL in seconds (upstream concurrency default: 60). */
  ttlSeconds?: number;
  log?: (msg: string) => void;
}

/** Upstream's bound on the cleanup RPCs (session.go CleanupTimeout). */
const CLEANUP_TIMEOUT_MS = 10_000;

export async function withLock<T>(client: EtcdClient, name: string, fn: (signal: AbortSignal) => Promise<T>, opts: LockOptions = {}): Promise<T> {
  const ttl = opts.ttlSeconds ?? 60;
  let lease: bigint;
  try {
    lease = await client.leaseGrant(ttl, opts.signal);
  } catch (e) {
    throw new Error(`error creating etcd session: ${(e as Error).message}`);
  }
  // The function stops when the session is lost (the lock is then someone else's) or the caller gives up.
  const lost = new AbortController();
  const signal = opts.signal ? AbortSignal.any([opts.signal, lost.signal]) : lost.signal;
  const keepAlive = setInterval(() => {
    client.leaseKeepAlive(lease, AbortSignal.timeout(Math.max(1000, (ttl * 1000) / 3))).then(
      (left) => {
        if (left <= 0) lost.abort(new Error(`etcd session lease ${lease.toString(16)} expired, mutex ${name} lost`));
      },
      (e: Error) => opts.log?.(`error refreshing the etcd session of mutex ${name}: ${e.message}`),
    );
  }, (ttl * 1000) / 3);
  try {
    opts.log?.(`waiting for mutex ${name}`);
    try {
      await client.lock(name, lease, signal);
    } catch (e) {
      throw new Error(`error acquiring mutex for key ${name}: ${(e as Error).message}`);
    }
    opts.log?.(`mutex ${name} acquired`);
    return await fn(signal);
  } finally {
    clearInterval(keepAlive);
    try {
      await client.leaseRevoke(lease, AbortSignal.timeout(CLEANUP_TIMEOUT_MS));
    } catch (e) {
      if (!opts.signal?.aborted) opts.log?.(`error releasing mutex ${name}: ${(e as Error).message}`);
    }
  }
}
