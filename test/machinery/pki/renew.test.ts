import { X509Certificate } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import {
  apiCertSANs, newTalosCA, ServerCertManager, validity, verifyChain, type CertAndKey, type CertSANs,
  type RenewReason,
} from "../../../src/machinery/pki/index.js";

let ca: CertAndKey;

beforeAll(async () => {
  ca = await newTalosCA();
});

function harness(opts: { validityMs?: number; now?: () => number } = {}) {
  let sans: CertSANs = apiCertSANs({ certSANs: ["10.0.0.10", "api.example.org"], addresses: ["10.5.0.2/24"], hostname: "cp1" });
  let currentCA = ca;
  const renewals: RenewReason[] = [];
  const mgr = new ServerCertManager({
    ca: () => currentCA,
    sans: () => sans,
    onRenew: (_c, reason) => renewals.push(reason),
    ...opts,
  });
  return {
    mgr,
    renewals,
    setSans: (s: CertSANs) => (sans = s),
    setCA: (c: CertAndKey) => (currentCA = c),
  };
}

describe("apid SAN set", () => {
  it("orders certSANs IPs, node addresses, loopback; certSANs names, hostname, FQDN; no duplicates", () => {
    const s = apiCertSANs({
      certSANs: ["10.0.0.10", "api.example.org", "fd00::1"],
      addresses: ["10.5.0.2/24", "10.0.0.10"],
      hostname: "cp1",
      fqdn: "cp1.example.org.",
    });
    expect(s.ips).toEqual(["10.0.0.10", "fd00::1", "10.5.0.2", "127.0.0.1", "::1"]);
    expect(s.dns).toEqual(["api.example.org", "cp1", "cp1.example.org"]);
    expect(s.commonName).toBe("cp1.example.org.");
  });
});

describe("ServerCertManager", () => {
  it("issues once and serves the same certificate while it is fresh", async () => {
    const h = harness();
    const a = await h.mgr.current();
    const b = await h.mgr.current();
    expect(b).toBe(a);
    expect(h.renewals).toEqual(["initial"]);
    expect(verifyChain(a.crt, ca.crt)).toBe(true);
    const c = new X509Certificate(a.crt);
    expect(c.checkIP("10.5.0.2")).toBe("10.5.0.2");
    expect(c.checkIP("::1")).toBe("::1");
    expect(c.checkHost("api.example.org")).toBe("api.example.org");
  });

  it("concurrent callers share one issuance", async () => {
    const h = harness();
    const [a, b] = await Promise.all([h.mgr.current(), h.mgr.current()]);
    expect(a).toBe(b);
    expect(h.renewals).toEqual(["initial"]);
  });

  it("renews when less than a third of the validity is left", async () => {
    let now = Date.now();
    const h = harness({ validityMs: 60 * 60_000, now: () => now });
    const first = await h.mgr.current();
    const notAfter = validity(first.crt).notAfter.getTime();
    now = notAfter - 25 * 60_000; // 25 of 60 minutes left: still fine
    expect(await h.mgr.check()).toBe(first);
    now = notAfter - 15 * 60_000; // 15 minutes left: below a third
    const second = await h.mgr.check();
    expect(second).not.toBe(first);
    expect(h.renewals).toEqual(["initial", "expiring"]);
  });

  it("renews when the SANs change, and the new certificate carries them", async () => {
    const h = harness();
    const first = await h.mgr.current();
    h.setSans(apiCertSANs({ addresses: ["10.5.0.3"], hostname: "cp1" }));
    const second = await h.mgr.check();
    expect(second).not.toBe(first);
    expect(new X509Certificate(second.crt).checkIP("10.5.0.3")).toBe("10.5.0.3");
    expect(new X509Certificate(second.crt).checkIP("10.5.0.2")).toBeUndefined();
    expect(h.renewals).toEqual(["initial", "sans-changed"]);
    // the same SANs in another order are not a change
    h.setSans(apiCertSANs({ addresses: ["10.5.0.3"], hostname: "cp1" }));
    expect(await h.mgr.check()).toBe(second);
  });

  it("renews from the new CA when the CA rotates", async () => {
    const h = harness();
    await h.mgr.current();
    const next = await newTalosCA();
    h.setCA(next);
    const cert = await h.mgr.check();
    expect(verifyChain(cert.crt, next.crt)).toBe(true);
    expect(h.renewals).toEqual(["initial", "ca-changed"]);
  });

  it("renews in the background with short validity, and stop() ends it", async () => {
    // 3 s certificates are renewed after 2 s (a third left); the timer is unref'd so it cannot hold the process
    const h = harness({ validityMs: 3_000 });
    await h.mgr.current();
    h.mgr.start(500);
    await new Promise((r) => setTimeout(r, 3_000));
    h.mgr.stop();
    expect(h.renewals[0]).toBe("initial");
    expect(h.renewals).toContain("expiring");
    const count = h.renewals.length;
    await new Promise((r) => setTimeout(r, 1_200));
    expect(h.renewals.length).toBe(count);
  });

  it("reports background failures and keeps the previous certificate", async () => {
    const errors: unknown[] = [];
    const renewed: string[] = [];
    let fail = false;
    const mgr = new ServerCertManager({
      onRenew: (c) => renewed.push(c.crt),
      ca: () => {
        if (fail) throw new Error("CA unavailable");
        return ca;
      },
      sans: () => apiCertSANs({ hostname: "cp1" }),
      validityMs: 1_000,
      onError: (e) => errors.push(e),
    });
    const first = await mgr.current();
    fail = true;
    mgr.start(100);
    await new Promise((r) => setTimeout(r, 400));
    mgr.stop();
    expect(errors.length).toBeGreaterThan(0);
    expect((errors[0] as Error).message).toBe("CA unavailable");
    expect(renewed).toEqual([first.crt]);
  });
});
