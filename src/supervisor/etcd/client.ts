/**
 * A small etcd v3 client over etcd's HTTPS/JSON gateway (/v3/...), with mutual TLS. The gateway encodes
 * uint64 as decimal strings, so member ids stay exact (bigint) without a gRPC stack; the snapshot comes
 * as a stream of base64 blobs whose last one is etcd's sha256 trailer.
 *
 * Several endpoints (the control planes, for joining and leaving) behave like clientv3's balancer: requests
 * stick to the endpoint that last answered and move on to the next one when it cannot be reached; an
 * idempotent request also moves on when the member answers Unavailable (no leader, stopping). gRPC metadata
 * travels as `Grpc-Metadata-*` headers, which is how `hasleader` (clientv3.WithRequireLeader) reaches etcd.
 */
import { request, Agent } from "node:https";
import { ApiError, Code } from "../../machinery/errors.js";

export interface EtcdTls {
  ca: string;
  cert: string;
  key: string;
}

export interface EtcdMemberInfo {
  id: bigint;
  /** The member name (Talos uses the hostname). */
  hostname: string;
  peerUrls: string[];
  clientUrls: string[];
  isLearner: boolean;
}

export interface EtcdMemberStatusInfo {
  memberId: bigint;
  protocolVersion: string;
  dbSize: bigint;
  dbSizeInUse: bigint;
  leader: bigint;
  raftIndex: bigint;
  raftTerm: bigint;
  raftAppliedIndex: bigint;
  errors: string[];
  isLearner: boolean;
  storageVersion: string;
}

export type EtcdAlarmType = "NONE" | "NOSPACE" | "CORRUPT";

export interface EtcdAlarmInfo {
  memberId: bigint;
  alarm: EtcdAlarmType;
}

type Json = Record<string, unknown>;

const big = (v: unknown): bigint => (v === undefined || v === null || v === "" ? 0n : BigInt(v as string));

/** An error etcd itself returned (with its gRPC code), or Unavailable when it could not be reached. */
export class EtcdError extends ApiError {
  constructor(
    code: Code,
    message: string,
    /** Set when the request failed on the way (connection, TLS, timeout) rather than being answered. */
    readonly transport?: "not-sent" | "ambiguous",
  ) {
    super(code, message);
  }
}

/** Per-request options: abort signal, clientv3.WithRequireLeader, and whether another endpoint may retry it. */
export interface CallOptions {
  signal?: AbortSignal;
  requireLeader?: boolean;
  /** Safe to send again to another member after an ambiguous failure (a read, or a removal). */
  idempotent?: boolean;
}

/** A lease-bound etcd lock (the v3lock service, the same keys as clientv3/concurrency.Mutex). */
export interface EtcdLockKey {
  key: string;
}

export class EtcdClient {
  private readonly agent: Agent;
  readonly endpoints: URL[];
  /** The endpoint that answered last; requests start there. */
  private current = 0;

  constructor(
    endpoints: string | readonly string[],
    tls: EtcdTls,
    private readonly timeoutMs = 10_000,
  ) {
    const list = typeof endpoints === "string" ? [endpoints] : [...endpoints];
    if (list.length === 0) throw new Error("no etcd endpoints given");
    this.endpoints = list.map(endpointUrl);
    this.agent = new Agent({ ca: tls.ca, cert: tls.cert, key: tls.key, keepAlive: false });
  }

  close(): void {
    this.agent.destroy();
  }

  /** GET /health: {"health":"true"} when the member can serve a quorum read. */
  async health(signal?: AbortSignal): Promise<void> {
    const body = (await this.call("GET", "/health", undefined, { signal, idempotent: true })) as { health?: string; reason?: string };
    if (body.health !== "true") throw new Error(`etcd is unhealthy${body.reason ? `: ${body.reason}` : ""}`);
  }

  /**
   * Upstream's health check (ValidateQuorum): a linearizable read of the key `health` goes through consensus, and a
   * learner refuses it ("rpc not supported for learner"), so a member only passes once it is a voting member of a
   * cluster with quorum. PermissionDenied also proves consensus (auth enabled).
   */
  async validateQuorum(signal?: AbortSignal): Promise<void> {
    try {
      await this.call("POST", "/v3/kv/range", { key: b64("health") }, { signal, idempotent: true });
    } catch (e) {
      if (e instanceof EtcdError && e.code === Code.PermissionDenied) return;
      throw e;
    }
  }

  async memberList(opts: CallOptions = {}): Promise<EtcdMemberInfo[]> {
    const r = (await this.call("POST", "/v3/cluster/member/list", {}, { idempotent: true, ...opts })) as { members?: Json[] };
    return (r.members ?? []).map(toMember);
  }

  /** MemberAddAsLearner: the new member (no name until it starts) and the member list that includes it. */
  async memberAddAsLearner(peerUrls: string[], opts: CallOptions = {}): Promise<{ member: EtcdMemberInfo; members: EtcdMemberInfo[] }> {
    const r = (await this.call("POST", "/v3/cluster/member/add", { peerURLs: peerUrls, isLearner: true }, opts)) as { member?: Json; members?: Json[] };
    if (!r.member) throw new EtcdError(Code.Unknown, "etcd answered the member add without the new member");
    return { member: toMember(r.member), members: (r.members ?? []).map(toMember) };
  }

  async memberPromote(id: bigint, opts: CallOptions = {}): Promise<void> {
    await this.call("POST", "/v3/cluster/member/promote", { ID: id.toString() }, opts);
  }

  async status(signal?: AbortSignal): Promise<EtcdMemberStatusInfo> {
    const r = (await this.call("POST", "/v3/maintenance/status", {}, { signal, idempotent: true })) as Json & { header?: Json };
    const version = (r.version as string) ?? "";
    // etcd < 3.6 reports no storage version; upstream derives "<major>.<minor>.0" from the server version.
    const m = /^(\d+)\.(\d+)/.exec(version);
    return {
      memberId: big(r.header?.member_id),
      protocolVersion: version,
      dbSize: big(r.dbSize),
      dbSizeInUse: big(r.dbSizeInUse),
      leader: big(r.leader),
      raftIndex: big(r.raftIndex),
      raftTerm: big(r.raftTerm),
      raftAppliedIndex: big(r.raftAppliedIndex),
      errors: (r.errors as string[]) ?? [],
      isLearner: r.isLearner === true,
      storageVersion: (r.storageVersion as string) || (m ? `${m[1]}.${m[2]}.0` : "unknown"),
    };
  }

  async alarmList(signal?: AbortSignal): Promise<EtcdAlarmInfo[]> {
    const r = (await this.call("POST", "/v3/maintenance/alarm", { action: "GET" }, { signal, idempotent: true })) as { alarms?: Json[] };
    return (r.alarms ?? []).map((a) => ({ memberId: big(a.memberID), alarm: ((a.alarm as string) ?? "NONE") as EtcdAlarmType }));
  }

  /** Deactivate every active alarm (what clientv3 does for an empty AlarmMember); returns those disarmed. */
  async alarmDisarm(signal?: AbortSignal): Promise<EtcdAlarmInfo[]> {
    const active = await this.alarmList(signal);
    for (const a of active) {
      await this.call("POST", "/v3/maintenance/alarm", { action: "DEACTIVATE", memberID: a.memberId.toString(), alarm: a.alarm }, { signal });
    }
    return active;
  }

  async defragment(signal?: AbortSignal): Promise<void> {
    await this.call("POST", "/v3/maintenance/defragment", {}, { signal });
  }

  async moveLeader(targetId: bigint, signal?: AbortSignal): Promise<void> {
    await this.call("POST", "/v3/maintenance/transfer-leadership", { targetID: targetId.toString() }, { signal });
  }

  async memberRemove(id: bigint, opts: CallOptions = {}): Promise<void> {
    // Removing an id twice fails with MemberNotFound, never removes something else: safe to retry elsewhere.
    await this.call("POST", "/v3/cluster/member/remove", { ID: id.toString() }, { idempotent: true, ...opts });
  }

  async put(key: string, value: string, signal?: AbortSignal): Promise<void> {
    await this.call("POST", "/v3/kv/put", { key: b64(key), value: b64(value) }, { signal });
  }

  async get(key: string, signal?: AbortSignal): Promise<string | undefined> {
    const r = (await this.call("POST", "/v3/kv/range", { key: b64(key) }, { signal, idempotent: true })) as { kvs?: { value?: string }[] };
    const v = r.kvs?.[0]?.value;
    return v === undefined ? (r.kvs?.length ? "" : undefined) : Buffer.from(v, "base64").toString();
  }

  /** The keys under `prefix`, in key order. */
  async keys(prefix: string, signal?: AbortSignal): Promise<string[]> {
    const r = (await this.call("POST", "/v3/kv/range", { key: b64(prefix), range_end: b64(prefixEnd(prefix)), keys_only: true }, { signal, idempotent: true })) as {
      kvs?: { key?: string }[];
    };
    return (r.kvs ?? []).map((kv) => Buffer.from(kv.key ?? "", "base64").toString());
  }

  /** A lease of `ttlSeconds`; keys attached to it go when it is revoked or expires. */
  async leaseGrant(ttlSeconds: number, signal?: AbortSignal): Promise<bigint> {
    const r = (await this.call("POST", "/v3/lease/grant", { TTL: String(ttlSeconds) }, { signal })) as { ID?: string };
    return big(r.ID);
  }

  /** One keep-alive round trip; the lease's remaining TTL in seconds (0: it has expired). */
  async leaseKeepAlive(id: bigint, signal?: AbortSignal): Promise<number> {
    const r = (await this.call("POST", "/v3/lease/keepalive", { ID: id.toString() }, { signal, idempotent: true })) as { result?: { TTL?: string } };
    return Number(r.result?.TTL ?? 0);
  }

  async leaseRevoke(id: bigint, signal?: AbortSignal): Promise<void> {
    await this.call("POST", "/v3/lease/revoke", { ID: id.toString() }, { signal, idempotent: true });
  }

  /**
   * Waits until this lease holds the lock `name` (etcd's v3lock service: the key `<name>/<lease hex>`, first by
   * create revision wins, exactly clientv3/concurrency.Mutex's keys, so Go clients contend for the same lock).
   * Blocks with no timeout of its own: bound it with `signal`.
   */
  async lock(name: string, lease: bigint, signal?: AbortSignal): Promise<EtcdLockKey> {
    const r = (await this.call("POST", "/v3/lock/lock", { name: b64(name), lease: lease.toString() }, { signal, timeoutMs: 0 })) as { key?: string };
    return { key: Buffer.from(r.key ?? "", "base64").toString() };
  }

  async unlock(key: EtcdLockKey, signal?: AbortSignal): Promise<void> {
    await this.call("POST", "/v3/lock/unlock", { key: b64(key.key) }, { signal, idempotent: true });
  }

  /**
   * The member's snapshot: bbolt database bytes followed by the 32-byte sha256 trailer, exactly what
   * `etcdctl snapshot save` writes and `etcdctl snapshot restore` verifies.
   */
  async *snapshot(signal?: AbortSignal): AsyncGenerator<Buffer> {
    const res = await this.open(this.endpoints[this.current], "POST", "/v3/maintenance/snapshot", {}, { signal }, 0);
    let rest = "";
    for await (const chunk of res) {
      rest += (chunk as Buffer).toString("utf8");
      let nl: number;
      while ((nl = rest.indexOf("\n")) >= 0) {
        const line = rest.slice(0, nl).trim();
        rest = rest.slice(nl + 1);
        if (line) yield decodeSnapshotLine(line);
      }
    }
    if (rest.trim()) yield decodeSnapshotLine(rest.trim());
  }

  private async call(method: string, path: string, body: unknown, opts: CallOptions & { timeoutMs?: number }): Promise<unknown> {
    const n = this.endpoints.length;
    const failures: string[] = [];
    let last: unknown;
    for (let i = 0; i < n; i++) {
      const idx = (this.current + i) % n;
      const url = this.endpoints[idx];
      try {
        const res = await this.open(url, method, path, body, opts, opts.timeoutMs ?? this.timeoutMs);
        const chunks: Buffer[] = [];
        for await (const c of res) chunks.push(c as Buffer);
        const text = Buffer.concat(chunks).toString("utf8");
        const json = text ? (JSON.parse(text) as Json) : {};
        if ((res.statusCode ?? 500) >= 400 || json.error) throw toEtcdError(json);
        this.current = idx;
        return json;
      } catch (e) {
        last = e;
        if (opts.signal?.aborted || !(e instanceof EtcdError) || !failsOver(e, opts.idempotent ?? false) || n === 1) break;
        failures.push(e.message);
      }
    }
    if (failures.length > 1 && last instanceof EtcdError && failsOver(last, opts.idempotent ?? false)) {
      // Every endpoint failed: say what each one said.
      throw new EtcdError(last.code, `no etcd endpoint answered: ${failures.join("; ")}`, last.transport);
    }
    throw last;
  }

  private open(url: URL, method: string, path: string, body: unknown, opts: CallOptions, timeoutMs: number) {
    return new Promise<import("node:http").IncomingMessage>((resolve, reject) => {
      const headers: Record<string, string> = {};
      if (opts.requireLeader) headers["Grpc-Metadata-hasleader"] = "true";
      const req = request(
        { host: url.hostname.replace(/^\[|\]$/g, ""), port: url.port, path, method, agent: this.agent, signal: opts.signal, timeout: timeoutMs || undefined, headers },
        async (res) => {
          if ((res.statusCode ?? 500) >= 400) {
            const chunks: Buffer[] = [];
            for await (const c of res) chunks.push(c as Buffer);
            let json: Json = {};
            try {
              json = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Json;
            } catch {
              json = { message: `HTTP ${res.statusCode}` };
            }
            reject(toEtcdError(json));
            return;
          }
          resolve(res);
        },
      );
      let timedOut = false;
      req.on("timeout", () => {
        timedOut = true;
        req.destroy(new Error("context deadline exceeded"));
      });
      req.on("error", (e) => {
        if (e instanceof ApiError) return reject(e);
        if (opts.signal?.aborted) return reject(opts.signal.reason ?? e);
        reject(transportError(url, e as NodeJS.ErrnoException, timedOut));
      });
      if (body !== undefined && method !== "GET") req.end(JSON.stringify(body));
      else req.end();
    });
  }
}

/** "host:port", "[v6]:port" or a URL; https unless said otherwise. */
function endpointUrl(e: string): URL {
  return new URL(/^[a-z]+:\/\//.test(e) ? e : `https://${e}`);
}

function toMember(m: Json): EtcdMemberInfo {
  return {
    id: big(m.ID),
    hostname: (m.name as string) ?? "",
    peerUrls: (m.peerURLs as string[]) ?? [],
    clientUrls: (m.clientURLs as string[]) ?? [],
    isLearner: m.isLearner === true,
  };
}

/** How far a failure got: never sent (safe to send elsewhere), or maybe processed. */
type Transport = "not-sent" | "ambiguous" | undefined;

/** Node's certificate verification codes: the member's certificate is not from this node's etcd CA. */
const UNTRUSTED_SERVER = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_SIGNATURE_FAILURE",
]);

const NOT_SENT = new Set(["ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN", "EADDRNOTAVAIL"]);

/** An error naming the endpoint and, for TLS failures, which side's certificate was refused. */
function transportError(url: URL, e: NodeJS.ErrnoException, timedOut: boolean): EtcdError {
  const code = e.code ?? "";
  let what = e.message;
  let transport: Transport = "ambiguous";
  if (UNTRUSTED_SERVER.has(code)) {
    what = `TLS: the member's certificate is not signed by this node's etcd CA (${e.message})`;
    transport = "not-sent";
  } else if (/ALERT_(UNKNOWN_CA|BAD_CERTIFICATE|CERTIFICATE_UNKNOWN|DECRYPT_ERROR)/.test(code)) {
    what = `TLS: the member refused this node's etcd client certificate, which another etcd CA signed (${e.message})`;
    transport = "not-sent";
  } else if (code === "ERR_TLS_CERT_ALTNAME_INVALID") {
    what = `TLS: the member's certificate does not name this address (${e.message})`;
    transport = "not-sent";
  } else if (NOT_SENT.has(code)) transport = "not-sent";
  else if (timedOut) what = "context deadline exceeded";
  return new EtcdError(Code.Unavailable, `etcd is not reachable at ${url.origin}: ${what}`, transport);
}

/** Whether another endpoint may be tried after `e`. */
function failsOver(e: EtcdError, idempotent: boolean): boolean {
  if (e.transport === "not-sent") return true;
  if (!idempotent) return false;
  return e.transport === "ambiguous" || e.code === Code.Unavailable;
}

/** The end of the key range holding every key that starts with `prefix` (clientv3.GetPrefixRangeEnd). */
function prefixEnd(prefix: string): Buffer {
  const b = Buffer.from(prefix);
  for (let i = b.length - 1; i >= 0; i--) {
    if (b[i] < 0xff) {
      const end = Buffer.from(b.subarray(0, i + 1));
      end[i]++;
      return end;
    }
  }
  return Buffer.from([0]);
}

function b64(s: string | Buffer): string {
  return (typeof s === "string" ? Buffer.from(s) : s).toString("base64");
}

function decodeSnapshotLine(line: string): Buffer {
  const j = JSON.parse(line) as { result?: { blob?: string }; error?: Json };
  if (j.error) throw toEtcdError(j.error);
  return Buffer.from(j.result?.blob ?? "", "base64");
}

function toEtcdError(j: Json): EtcdError {
  const code = typeof j.code === "number" ? (j.code as Code) : Code.Unknown;
  const msg = (j.message as string) || (typeof j.error === "string" ? j.error : "") || "etcd request failed";
  return new EtcdError(code, msg);
}
