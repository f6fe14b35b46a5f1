/**
 * The one object the API server holds for forwarding: where the client certificate comes from, the backend
 * pool, and the two entry points the transport calls for a call the director routed elsewhere.
 *
 * The certificate is the node's own impersonator client certificate (ApiCertificates `api`.client, O =
 * os:impersonator, which control planes issue from the machine CA; workers have none and cannot forward).
 * When it changes, every backend is flushed so new connections present the new one.
 */
import type * as grpc from "@grpc/grpc-js";
import { tlsKeyPem } from "../../machinery/pki/pem.js";
import { readSpec } from "../../machinery/resources/read.js";
import { APICertsType, SECRET_IDS } from "../../machinery/resources/types/secrets.js";
import type { State } from "../../state/types.js";
import type { ClientMaterial } from "./backend.js";
import type { Route } from "./director.js";
import { BackendPool, DEFAULT_POOL_OPTIONS, type PoolOptions } from "./pool.js";
import { one2manyStream, one2manyUnary, one2oneStream, one2oneUnary, type CallShape, type LocalServe, type Targets } from "./one2many.js";

export type ForwardRoute = Exclude<Route, { kind: "local" }>;

/** What a forwarded call carries from the incoming one. */
export interface Incoming {
  path: string;
  metadata: grpc.Metadata;
  /** The caller's effective roles (after the impersonator rule). */
  roles: ReadonlySet<string>;
  /** The incoming :authority (upstream's proxyfrom value). */
  authority?: string;
  deadline?: number;
  signal?: AbortSignal;
}

/**
 * Outgoing metadata as upstream's backend makes it: the incoming metadata, without the routing keys, with
 * `talos-role` = the caller's roles (one value each; only an impersonator certificate makes the target read
 * them) and `proxyfrom` = the incoming authority, which tells the target to serve the call itself.
 */
export function outgoingMetadata(incoming: grpc.Metadata, roles: ReadonlySet<string>, authority: string | undefined): grpc.Metadata {
  const md = incoming.clone();
  for (const k of ["nodes", "node", "talos-role", "proxyfrom", ":authority"]) md.remove(k);
  for (const r of roles) md.add("talos-role", r);
  md.set("proxyfrom", authority || "unknown");
  return md;
}

export class Forwarder implements Targets {
  readonly pool: BackendPool;
  private lastCert: string | undefined;
  private cached: ClientMaterial | undefined;

  constructor(
    private readonly state: State,
    private readonly localCheck: (target: string) => boolean,
    options: Partial<PoolOptions> = {},
  ) {
    this.pool = new BackendPool(() => this.material(), { ...DEFAULT_POOL_OPTIONS, ...options });
  }

  isLocal(target: string): boolean {
    return this.localCheck(target);
  }

  /** Whether this node holds a client certificate to forward with. */
  canForward(): boolean {
    return this.material() !== undefined;
  }

  material(): ClientMaterial | undefined {
    const certs = readSpec(this.state, APICertsType, SECRET_IDS.api);
    const client = certs?.client;
    if (!certs || !client) return undefined;
    if (client.crt !== this.lastCert) {
      // A new certificate (renewal, new CA): connections made with the old one are closed gracefully.
      if (this.lastCert !== undefined) this.pool.flush();
      this.lastCert = client.crt;
      this.cached = { ca: certs.acceptedCAs.map((c) => c.crt), certPem: client.crt, keyPem: tlsKeyPem(client.key) };
    }
    return this.cached;
  }

  private shape(inc: Incoming, requests: CallShape["requests"]): CallShape {
    return { path: inc.path, metadata: outgoingMetadata(inc.metadata, inc.roles, inc.authority), requests, deadline: inc.deadline, signal: inc.signal };
  }

  /** A unary or client-streaming call: the reply bytes to send. Throws the target's status for one-to-one. */
  unary(route: ForwardRoute, inc: Incoming, requests: CallShape["requests"], local: LocalServe): Promise<Buffer> {
    const call = this.shape(inc, requests);
    return route.kind === "one2one" ? one2oneUnary(this, route.target, call) : one2manyUnary(this, route.targets, call, local);
  }

  /** A server-streaming call: every reply message through `out`. */
  stream(route: ForwardRoute, inc: Incoming, request: Uint8Array, local: LocalServe, out: (msg: Buffer) => Promise<void>): Promise<void> {
    const call = this.shape(inc, [request]);
    return route.kind === "one2one" ? one2oneStream(this, route.target, call, out) : one2manyStream(this, route.targets, call, local, out);
  }

  close(): void {
    this.pool.close();
  }
}
