/**
 * Which TLS identity the API presents. It follows resources, never the config directly:
 * - no MachineConfig: a self-signed maintenance certificate for the node's addresses, no client certificate
 *   (everyone os:reader);
 * - ApiCertificates `api` with a server certificate (a control plane issues its own, see
 *   controllers/secrets/api-certs.ts; a worker gets one from a control plane's trustd): mutual TLS against the
 *   accepted CAs, and a renewed certificate is rotated in without dropping connections;
 * - a config but no certificate yet: a control plane keeps its previous mode for the moment the certificate
 *   takes to issue; a worker (no CA key) serves read-only over a self-signed certificate and says plainly what it
 *   waits for: which trustd addresses it asks and why the last attempt failed (setWorkerStatus, fed by
 *   secrets.APIController).
 */
import type { Logger } from "pino";
import type { CertAndKey } from "../machinery/pki/ca.js";
import { selfSignedMaintenanceCert } from "../machinery/pki/maintenance.js";
import { tlsKeyPem } from "../machinery/pki/pem.js";
import { pointer, readSpec } from "../machinery/resources/read.js";
import { machineConfig, machineConfigPtr } from "../machinery/resources/types/config.js";
import { HOSTNAME_ID, HostnameStatusType, NETWORK_NS, NODE_ADDRESS, NodeAddressType, nodeAddressIPs } from "../machinery/resources/types/network.js";
import { APICertsType, OSRootType, SECRET_IDS } from "../machinery/resources/types/secrets.js";
import type { State } from "../state/types.js";
import type { WorkerCertStatus } from "../controllers/secrets/api-certs.js";
import type { ListenerMode, TlsIdentity } from "./transport/listener.js";

export const WORKER_WAITING_REASON =
  "waiting for the API server certificate from a control plane's trustd (port 50001, authenticated with machine.token); until it arrives this worker serves only read-only calls, over an unverified certificate";

/** The waiting reason with what the worker is doing about it. */
export function workerWaitingReason(s: WorkerCertStatus | undefined): string {
  if (!s) return WORKER_WAITING_REASON;
  if (s.endpoints.length === 0) return `${WORKER_WAITING_REASON}; waiting for ${s.waitingFor ?? "the control-plane endpoints"}`;
  const asking = `asking ${s.endpoints.join(", ")}${s.endpoints.length > 1 ? " in turn" : ""}`;
  return s.lastError ? `${WORKER_WAITING_REASON}; ${asking}; last attempt failed: ${s.lastError}` : `${WORKER_WAITING_REASON}; ${asking}`;
}

export interface IdentityTarget {
  setMode(mode: ListenerMode): void;
  rotate(identity: TlsIdentity): void;
}

function toIdentity(c: CertAndKey): TlsIdentity {
  return { certPem: c.crt, keyPem: tlsKeyPem(c.key) };
}

export function isIP(s: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(s) || s.includes(":");
}

export class ApiIdentity {
  private maintenanceCA: CertAndKey | undefined;
  private maintenanceCert: { key: string; identity: TlsIdentity } | undefined;
  private current: ListenerMode | undefined;
  private unsubscribes: Array<() => void> = [];
  private queue: Promise<void> = Promise.resolve();
  private readonly modeCbs = new Set<(mode: ListenerMode) => void>();
  private workerStatus: WorkerCertStatus | undefined;

  constructor(
    private readonly state: State,
    private readonly log: Logger,
  ) {}

  get mode(): ListenerMode | undefined {
    return this.current;
  }

  /** Called after every switch (the entry wiring reports the worker's wait as a condition from it). */
  onMode(cb: (mode: ListenerMode) => void): void {
    this.modeCbs.add(cb);
  }

  /** What a worker without its certificate waits for (from secrets.APIController); callbacks see it while waiting. */
  setWorkerStatus(s: WorkerCertStatus | undefined): void {
    this.workerStatus = s;
    if (s) this.log.info({ reason: workerWaitingReason(s) }, "the API waits for its server certificate");
    const mode = this.current;
    if (mode?.kind === "waiting") for (const cb of this.modeCbs) cb(mode);
  }

  /** Why a waiting node serves only read-only calls, with what it is doing about it. */
  waitingReason(): string {
    return workerWaitingReason(this.workerStatus);
  }

  /** The mode for the current resources (computing the maintenance certificate if needed). */
  async compute(): Promise<ListenerMode> {
    const cfg = machineConfig(this.state);
    const certs = readSpec(this.state, APICertsType, SECRET_IDS.api);
    if (cfg && certs?.server) {
      return { kind: "mtls", identity: toIdentity(certs.server), clientCAs: certs.acceptedCAs.map((c) => c.crt) };
    }
    if (cfg) {
      const root = readSpec(this.state, OSRootType, SECRET_IDS.os);
      // A control plane issues its certificate in a moment: keep serving what we served until it arrives.
      if (root?.issuingCA && this.current) return this.current;
      if (!root?.issuingCA) return { kind: "waiting", identity: await this.maintenance() };
    }
    return { kind: "maintenance", identity: await this.maintenance() };
  }

  /**
   * The first mode, once settled: with a stored control-plane config that is mTLS as soon as its certificate is
   * issued (bounded by `settleMs`, after which whatever the resources give is served).
   */
  async initial(settleMs = 30_000): Promise<ListenerMode> {
    const deadline = Date.now() + settleMs;
    for (;;) {
      const mode = await this.compute();
      const cfg = machineConfig(this.state);
      const root = readSpec(this.state, OSRootType, SECRET_IDS.os);
      const unsettled = cfg !== undefined && (!root || (root.issuingCA !== undefined && mode.kind !== "mtls"));
      if (!unsettled || Date.now() > deadline) {
        this.current = mode;
        for (const cb of this.modeCbs) cb(mode);
        return mode;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Follow the resources from now on, switching (or rotating) `target` as they change. */
  start(target: IdentityTarget): void {
    const kick = () => {
      this.queue = this.queue.then(() => this.update(target)).catch((err) => this.log.error({ err }, "API identity update failed"));
    };
    const watch = (ptr: { namespace: string; type: string; id: string }) => this.unsubscribes.push(this.state.watch(ptr, () => kick()));
    watch(machineConfigPtr);
    watch(pointer(APICertsType, SECRET_IDS.api));
    watch(pointer(OSRootType, SECRET_IDS.os));
    watch({ namespace: NETWORK_NS, type: NodeAddressType.type, id: NODE_ADDRESS.accumulativeNoK8s });
    watch(pointer(HostnameStatusType, HOSTNAME_ID));
  }

  stop(): void {
    for (const u of this.unsubscribes) u();
    this.unsubscribes = [];
  }

  private async update(target: IdentityTarget): Promise<void> {
    const next = await this.compute();
    const prev = this.current;
    if (prev && prev.kind === next.kind && sameIdentity(prev, next)) return;
    this.current = next;
    if (prev && prev.kind === next.kind && next.kind === "mtls" && sameCAs(prev, next)) {
      this.log.info("rotating the API server certificate");
      target.rotate(next.identity);
    } else {
      this.log.info({ from: prev?.kind, to: next.kind }, "switching the API TLS mode");
      target.setMode(next);
    }
    for (const cb of this.modeCbs) cb(next);
  }

  /** The self-signed maintenance certificate for the node's current names, reissued when they change. */
  private async maintenance(): Promise<TlsIdentity> {
    const hs = readSpec(this.state, HostnameStatusType, HOSTNAME_ID);
    const ips = uniq([...nodeAddressIPs(readSpec(this.state, NodeAddressType, NODE_ADDRESS.accumulativeNoK8s)), "127.0.0.1", "::1"]);
    const dns = [hs?.hostname].filter((n): n is string => !!n);
    const key = JSON.stringify([ips, dns]);
    if (this.maintenanceCert?.key === key) return this.maintenanceCert.identity;
    const { ca, cert } = await selfSignedMaintenanceCert({ ca: this.maintenanceCA, ipSANs: ips, dnsSANs: dns });
    this.maintenanceCA = ca;
    this.maintenanceCert = { key, identity: toIdentity(cert) };
    return this.maintenanceCert.identity;
  }
}

function sameIdentity(a: ListenerMode, b: ListenerMode): boolean {
  return a.identity.certPem === b.identity.certPem && sameCAs(a, b);
}

function sameCAs(a: ListenerMode, b: ListenerMode): boolean {
  const ca = (m: ListenerMode) => (m.kind === "mtls" ? m.clientCAs.join("\n") : "");
  return ca(a) === ca(b);
}

function uniq(list: string[]): string[] {
  return [...new Set(list)];
}
