/**
 * Keeps apid's server certificate current: issued from the OS CA for the node's present SANs, re-issued when a third
 * of its validity is left (upstream re-issues its 24 h certificate every 12 h), when the SANs change, or when the CA
 * changes. `onRenew` lets the TLS layer swap its secure context. Timers are unref'd so they never keep the process up.
 */
import { issueServerCert, DEFAULT_CERT_VALIDITY_MS } from "./issue.js";
import type { CertAndKey } from "./ca.js";
import { validity } from "./verify.js";

export interface CertSANs {
  ips: string[];
  dns: string[];
  /** Subject CN; upstream uses the node FQDN. */
  commonName?: string;
}

export interface ServerCertManagerOptions {
  /** Current issuing CA (crt+key); called on every check so CA rotation is picked up. */
  ca: () => CertAndKey | Promise<CertAndKey>;
  sans: () => CertSANs | Promise<CertSANs>;
  validityMs?: number;
  /** Renew when less than this fraction of the validity remains. */
  renewFraction?: number;
  onRenew?: (cert: CertAndKey, reason: RenewReason) => void;
  /** Background check failures (the previous certificate stays in use and the check is retried). */
  onError?: (err: unknown) => void;
  now?: () => number;
}

export type RenewReason = "initial" | "expiring" | "sans-changed" | "ca-changed";

interface Issued {
  cert: CertAndKey;
  caCrt: string;
  sansKey: string;
  notAfter: number;
}

/** Builds apid's SAN set: certSANs split into IPs/names, node addresses, loopback, hostname and FQDN (deduplicated). */
export function apiCertSANs(input: {
  certSANs?: string[];
  addresses?: string[];
  hostname?: string;
  fqdn?: string;
}): CertSANs {
  const ips: string[] = [];
  const dns: string[] = [];
  const add = (list: string[], v: string | undefined) => {
    const s = (v ?? "").replace(/\.+$/, "");
    if (s !== "" && !list.includes(s)) list.push(s);
  };
  for (const san of input.certSANs ?? []) (isIP(san) ? add(ips, san) : add(dns, san));
  for (const a of input.addresses ?? []) add(ips, a.replace(/\/\d+$/, ""));
  add(ips, "127.0.0.1");
  add(ips, "::1");
  add(dns, input.hostname);
  add(dns, input.fqdn);
  return { ips, dns, commonName: input.fqdn || input.hostname || undefined };
}

function isIP(s: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(s) || (s.includes(":") && /^[0-9a-fA-F:.]+$/.test(s));
}

function sansKey(s: CertSANs): string {
  return JSON.stringify([[...s.ips].sort(), [...s.dns].sort(), s.commonName ?? ""]);
}

export class ServerCertManager {
  private issued: Issued | undefined;
  private inflight: Promise<CertAndKey> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private maxIntervalMs = 60_000;
  private readonly validityMs: number;
  private readonly renewFraction: number;
  private readonly now: () => number;

  constructor(private readonly opts: ServerCertManagerOptions) {
    this.validityMs = opts.validityMs ?? DEFAULT_CERT_VALIDITY_MS;
    this.renewFraction = opts.renewFraction ?? 1 / 3;
    this.now = opts.now ?? Date.now;
  }

  /** The current certificate, issuing or renewing first when needed. */
  current(): Promise<CertAndKey> {
    return this.check();
  }

  /** Re-evaluates CA, SANs and expiry (call it when addresses or hostname change); renews when needed. */
  check(): Promise<CertAndKey> {
    // serialise checks: two concurrent callers must not issue two certificates
    this.inflight ??= this.doCheck().finally(() => (this.inflight = undefined));
    return this.inflight;
  }

  private async doCheck(): Promise<CertAndKey> {
    const [ca, sans] = await Promise.all([this.opts.ca(), this.opts.sans()]);
    const key = sansKey(sans);
    const reason = this.renewReason(ca, key);
    if (!reason && this.issued) return this.issued.cert;
    const cert = await issueServerCert(ca, {
      commonName: sans.commonName,
      ipSANs: sans.ips,
      dnsSANs: sans.dns,
      validityMs: this.validityMs,
    });
    this.issued = { cert, caCrt: ca.crt, sansKey: key, notAfter: validity(cert.crt).notAfter.getTime() };
    this.opts.onRenew?.(cert, reason ?? "initial");
    if (this.timer) this.schedule();
    return cert;
  }

  private renewReason(ca: CertAndKey, key: string): RenewReason | undefined {
    const cur = this.issued;
    if (!cur) return "initial";
    if (cur.caCrt !== ca.crt) return "ca-changed";
    if (cur.sansKey !== key) return "sans-changed";
    if (cur.notAfter - this.now() < this.validityMs * this.renewFraction) return "expiring";
    return undefined;
  }

  /** Starts background renewal; checks at the renewal point and at least every `maxIntervalMs`. */
  start(maxIntervalMs = 60_000): void {
    this.maxIntervalMs = maxIntervalMs;
    this.schedule();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (this.timer) clearTimeout(this.timer);
    const renewAt = this.issued ? this.issued.notAfter - this.validityMs * this.renewFraction : this.now();
    const delay = Math.max(0, Math.min(renewAt - this.now(), this.maxIntervalMs));
    this.timer = setTimeout(() => {
      this.check()
        .catch((err: unknown) => this.opts.onError?.(err))
        .finally(() => {
          if (this.timer) this.schedule();
        });
    }, delay);
    this.timer.unref();
  }
}
