/**
 * Which TLS identity the API presents, derived from the node's config:
 * - no config: a self-signed maintenance certificate, no client certificate (everyone os:reader);
 * - a config whose OS CA includes its key (control plane): a 24 h server certificate signed by that CA,
 *   renewed well before it expires or when the SANs change, and mutual TLS against the CA;
 * - a config with the CA certificate only (worker): the node must get its certificate from a control
 *   plane's trustd, which arrives with multi-node support; until then it serves read-only over a
 *   self-signed certificate and says plainly what it waits for.
 */
import type { Logger } from "pino";
import type { MachineConfig } from "../machinery/config/index.js";
import type { CertAndKey } from "../machinery/pki/ca.js";
import { issueServerCert } from "../machinery/pki/issue.js";
import { selfSignedMaintenanceCert } from "../machinery/pki/maintenance.js";
import { tlsKeyPem } from "../machinery/pki/pem.js";
import type { TlsIdentity, ListenerMode } from "./transport/listener.js";

export const WORKER_WAITING_REASON =
  "waiting for the API server certificate from a control plane's trustd (port 50001): multi-node support is not implemented yet, so a worker node can only serve read-only calls over an unverified certificate";

export interface SanSource {
  addresses(): string[];
  hostname(): string;
}

const RENEW_FRACTION = 1 / 3;
const SERVER_VALIDITY_MS = 24 * 3_600_000;

function decodeB64(s: string | undefined): string | undefined {
  if (!s) return undefined;
  const text = Buffer.from(s, "base64").toString("utf8");
  return text.includes("-----BEGIN") ? text : undefined;
}

function toIdentity(c: CertAndKey): TlsIdentity {
  return { certPem: c.crt, keyPem: tlsKeyPem(c.key) };
}

export function isIP(s: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(s) || s.includes(":");
}

export class IdentityManager {
  private renewTimer: NodeJS.Timeout | undefined;
  private maintenanceCA: CertAndKey | undefined;

  constructor(
    private readonly sans: SanSource,
    private readonly log: Logger,
    private readonly apply: (mode: ListenerMode) => void,
    private readonly rotate: (identity: TlsIdentity) => void,
  ) {}

  async maintenance(): Promise<ListenerMode> {
    const { ca, cert } = await selfSignedMaintenanceCert({
      ca: this.maintenanceCA,
      ipSANs: uniq([...this.sans.addresses(), "127.0.0.1", "::1"]),
      dnsSANs: [this.sans.hostname()].filter(Boolean),
    });
    this.maintenanceCA = ca;
    return { kind: "maintenance", identity: toIdentity(cert) };
  }

  /** Compute the mode for a config (undefined = maintenance) and switch the listener to it. */
  async follow(cfg: MachineConfig | undefined): Promise<ListenerMode> {
    this.stopRenewal();
    const mode = await this.modeFor(cfg);
    this.apply(mode);
    return mode;
  }

  async modeFor(cfg: MachineConfig | undefined): Promise<ListenerMode> {
    if (!cfg) return this.maintenance();
    const caCrt = decodeB64(cfg.machine?.ca?.crt);
    const caKey = decodeB64(cfg.machine?.ca?.key);
    if (!caCrt) throw new Error("machine.ca.crt is missing: the config has no OS CA to authenticate clients with");
    if (!caKey) {
      const m = await this.maintenance();
      return { kind: "waiting", identity: m.identity };
    }
    const ca = { crt: caCrt, key: caKey };
    const cert = await this.issue(cfg, ca);
    this.scheduleRenewal(cfg, ca);
    return { kind: "mtls", identity: toIdentity(cert), clientCAs: [caCrt] };
  }

  private issue(cfg: MachineConfig, ca: CertAndKey): Promise<CertAndKey> {
    const certSANs = (cfg.machine?.certSANs ?? []) as string[];
    const hostname = cfg.hostname() ?? this.sans.hostname();
    return issueServerCert(ca, {
      commonName: hostname,
      ipSANs: uniq([...certSANs.filter(isIP), ...this.sans.addresses(), "127.0.0.1", "::1"]),
      dnsSANs: uniq([...certSANs.filter((s) => !isIP(s)), hostname].filter(Boolean)),
      validityMs: SERVER_VALIDITY_MS,
    });
  }

  private scheduleRenewal(cfg: MachineConfig, ca: CertAndKey): void {
    this.renewTimer = setTimeout(() => {
      this.issue(cfg, ca).then(
        (cert) => {
          this.log.info("renewed the API server certificate");
          this.rotate(toIdentity(cert));
          this.scheduleRenewal(cfg, ca);
        },
        (err) => this.log.error({ err }, "API server certificate renewal failed"),
      );
    }, SERVER_VALIDITY_MS * (1 - RENEW_FRACTION));
    this.renewTimer.unref();
  }

  stopRenewal(): void {
    if (this.renewTimer) clearTimeout(this.renewTimer);
    this.renewTimer = undefined;
  }
}

function uniq(list: string[]): string[] {
  return [...new Set(list)];
}
