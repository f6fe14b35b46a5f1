/**
 * A small etcd v3 client over etcd's HTTPS/JSON gateway (/v3/...), with mutual TLS. The gateway encodes
 * uint64 as decimal strings, so member ids stay exact (bigint) without a gRPC stack; the snapshot comes
 * as a stream of base64 blobs whose last one is etcd's sha256 trailer.
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
export class EtcdError extends ApiError {}

export class EtcdClient {
  private readonly agent: Agent;
  private readonly url: URL;

  constructor(
    endpoint: string,
    tls: EtcdTls,
    private readonly timeoutMs = 10_000,
  ) {
    this.url = new URL(endpoint);
    this.agent = new Agent({ ca: tls.ca, cert: tls.cert, key: tls.key, keepAlive: false });
  }

  close(): void {
    this.agent.destroy();
  }

  /** GET /health: {"health":"true"} when the member can serve a quorum read. */
  async health(signal?: AbortSignal): Promise<void> {
    const body = (await this.call("GET", "/health", undefined, signal)) as { health?: string; reason?: string };
    if (body.health !== "true") throw new Error(`etcd is unhealthy${body.reason ? `: ${body.reason}` : ""}`);
  }

  async memberList(signal?: AbortSignal): Promise<EtcdMemberInfo[]> {
    const r = (await this.call("POST", "/v3/cluster/member/list", {}, signal)) as { members?: Json[] };
    return (r.members ?? []).map((m) => ({
      id: big(m.ID),
      hostname: (m.name as string) ?? "",
      peerUrls: (m.peerURLs as string[]) ?? [],
      clientUrls: (m.clientURLs as string[]) ?? [],
      isLearner: m.isLearner === true,
    }));
  }

  async status(signal?: AbortSignal): Promise<EtcdMemberStatusInfo> {
    const r = (await this.call("POST", "/v3/maintenance/status", {}, signal)) as Json & { header?: Json };
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
    const r = (await this.call("POST", "/v3/maintenance/alarm", { action: "GET" }, signal)) as { alarms?: Json[] };
    return (r.alarms ?? []).map((a) => ({ memberId: big(a.memberID), alarm: ((a.alarm as string) ?? "NONE") as EtcdAlarmType }));
  }

  /** Deactivate every active alarm (what clientv3 does for an empty AlarmMember); returns those disarmed. */
  async alarmDisarm(signal?: AbortSignal): Promise<EtcdAlarmInfo[]> {
    const active = await this.alarmList(signal);
    for (const a of active) {
      await this.call("POST", "/v3/maintenance/alarm", { action: "DEACTIVATE", memberID: a.memberId.toString(), alarm: a.alarm }, signal);
    }
    return active;
  }

  async defragment(signal?: AbortSignal): Promise<void> {
    await this.call("POST", "/v3/maintenance/defragment", {}, signal);
  }

  async moveLeader(targetId: bigint, signal?: AbortSignal): Promise<void> {
    await this.call("POST", "/v3/maintenance/transfer-leadership", { targetID: targetId.toString() }, signal);
  }

  async memberRemove(id: bigint, signal?: AbortSignal): Promise<void> {
    await this.call("POST", "/v3/cluster/member/remove", { ID: id.toString() }, signal);
  }

  async put(key: string, value: string, signal?: AbortSignal): Promise<void> {
    await this.call("POST", "/v3/kv/put", { key: b64(key), value: b64(value) }, signal);
  }

  async get(key: string, signal?: AbortSignal): Promise<string | undefined> {
    const r = (await this.call("POST", "/v3/kv/range", { key: b64(key) }, signal)) as { kvs?: { value?: string }[] };
    const v = r.kvs?.[0]?.value;
    return v === undefined ? (r.kvs?.length ? "" : undefined) : Buffer.from(v, "base64").toString();
  }

  /**
   * The member's snapshot: bbolt database bytes followed by the 32-byte sha256 trailer, exactly what
   * `etcdctl snapshot save` writes and `etcdctl snapshot restore` verifies.
   */
  async *snapshot(signal?: AbortSignal): AsyncGenerator<Buffer> {
    const res = await this.open("POST", "/v3/maintenance/snapshot", {}, signal, 0);
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

  private async call(method: string, path: string, body: unknown, signal?: AbortSignal): Promise<unknown> {
    const res = await this.open(method, path, body, signal, this.timeoutMs);
    const chunks: Buffer[] = [];
    for await (const c of res) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const json = text ? (JSON.parse(text) as Json) : {};
    if ((res.statusCode ?? 500) >= 400 || json.error) throw toEtcdError(json);
    return json;
  }

  private open(method: string, path: string, body: unknown, signal: AbortSignal | undefined, timeoutMs: number) {
    return new Promise<import("node:http").IncomingMessage>((resolve, reject) => {
      const req = request(
        { host: this.url.hostname, port: this.url.port, path, method, agent: this.agent, signal, timeout: timeoutMs || undefined },
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
      req.on("timeout", () => req.destroy(new Error("context deadline exceeded")));
      req.on("error", (e) => reject(e instanceof ApiError ? e : new EtcdError(Code.Unavailable, `etcd is not reachable at ${this.url.origin}: ${e.message}`)));
      if (body !== undefined && method !== "GET") req.end(JSON.stringify(body));
      else req.end();
    });
  }
}

function b64(s: string): string {
  return Buffer.from(s).toString("base64");
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
