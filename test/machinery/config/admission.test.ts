/**
 * Admission (src/machinery/config/admission.ts, run by validateConfig): every way a config can make the node's API
 * identity fail, or produce a certificate clients reject, is refused with the YAML path; real configs pass.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { generateKeyPairSync } from "node:crypto";
import { ConfigValidationError, loadConfig, validateConfig } from "../../../src/machinery/config/index.js";
import { admitted } from "../../../src/machinery/config/admission.js";
import { KeyUsage } from "../../../src/machinery/pki/certificate.js";
import { encodePrivateKeyPem } from "../../../src/machinery/pki/pem.js";
import { generateConfigs, type GeneratedConfigs } from "../../../src/machinery/generate/index.js";
import { b64, editV1, makeCA, makeP384CA, rsaKey, withMachineCA } from "./ca-variants.js";
import { fixture } from "./fixtures.js";

let gen: GeneratedConfigs;
beforeAll(async () => {
  gen = await generateConfigs({ clusterName: "demo", endpoint: "https://127.0.0.1:6443", installDisk: "/dev/vda", talosVersion: "v1.13" });
}, 60_000);

/** Validation errors of a config text ([] when it is accepted). */
function problems(text: string, now?: Date): string[] {
  try {
    validateConfig(loadConfig(text), { mode: "local", now });
    return [];
  } catch (e) {
    if (e instanceof ConfigValidationError) return e.problems;
    throw e;
  }
}

describe("admission accepts real configs", () => {
  it("generated control plane and worker configs (v1.13 and v1.14 layouts)", async () => {
    const v14 = await generateConfigs({ clusterName: "demo", endpoint: "https://127.0.0.1:6443", installDisk: "/dev/vda", talosVersion: "v1.14" });
    for (const text of [gen.controlplane, gen.worker, v14.controlplane, v14.worker]) expect(problems(text)).toEqual([]);
  });

  it("the upstream fixtures", () => {
    for (const f of ["controlplane.yaml", "worker.yaml", "loader-controlplane.yaml"]) expect(problems(fixture("configs", f))).toEqual([]);
  });

  it("Ed25519 (either PEM label), ECDSA P-256 and RSA 2048 CAs", async () => {
    const ec = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey;
    for (const key of [undefined, ec, rsaKey(2048)]) {
      expect(problems(withMachineCA(gen.controlplane, await makeCA({ key })))).toEqual([]);
    }
    const ca = await makeCA();
    const pkcs8Label = ca.key.replace(/ED25519 PRIVATE KEY/g, "PRIVATE KEY");
    expect(problems(withMachineCA(gen.controlplane, { crt: ca.crt, key: pkcs8Label }))).toEqual([]);
  });

  it("valid SANs: IPv4, IPv6, DNS names, wildcards, a trailing dot, empty entries", () => {
    const text = editV1(gen.controlplane, (v) => {
      v.machine.certSANs = ["10.0.0.1", "fd00::1", "::1", "api.example.com", "*.example.com", "node_1.local.", "", "1.2.3"];
      (v.machine.network as Record<string, unknown>) = { hostname: "Node_1.Example" };
    });
    expect(problems(text)).toEqual([]);
  });
});

describe("admission refuses what would lock the node out", () => {
  const refuse = async (text: string | Promise<string>, path: string, match: RegExp, now?: Date) => {
    const p = problems(await text, now);
    expect(p.length, `expected a problem at ${path}`).toBeGreaterThan(0);
    expect(p.some((x) => x.startsWith(`${path}: `) && match.test(x)), p.join("\n")).toBe(true);
  };

  it("a garbage or non-PEM machine.ca.crt / key", async () => {
    const ca = await makeCA();
    await refuse(withMachineCA(gen.controlplane, { crt: "garbage", key: ca.key }), "machine.ca.crt", /not a PEM certificate/);
    await refuse(withMachineCA(gen.controlplane, { crt: ca.crt, key: "garbage" }), "machine.ca.key", /not a PEM private key/);
    const brokenBody = ca.crt.replace(/\n[A-Za-z0-9+/]{10}/, "\nAAAAAAAAAA");
    await refuse(withMachineCA(gen.controlplane, { crt: brokenBody, key: ca.key }), "machine.ca.crt", /failed to parse the certificate|not a PEM/);
    await refuse(withMachineCA(gen.controlplane, { crt: ca.key, key: ca.key }), "machine.ca.crt", /expected a CERTIFICATE PEM block/);
    await refuse(withMachineCA(gen.controlplane, { crt: ca.crt + ca.crt, key: ca.key }), "machine.ca.crt", /exactly one PEM certificate block, found 2/);
    await refuse(withMachineCA(gen.controlplane, { crt: ca.crt, key: ca.key.replace(/\n[A-Za-z0-9+/]{8}/, "\n!!!!!!!!") }), "machine.ca.key", /failed to parse PEM block|key/);
  });

  it("a machine.ca.key that does not match its certificate", async () => {
    const a = await makeCA();
    const b = await makeCA();
    await refuse(withMachineCA(gen.controlplane, { crt: a.crt, key: b.key }), "machine.ca.key", /does not belong to machine.ca.crt/);
  });

  it("keys the issuer cannot sign with", async () => {
    await refuse(makeP384CA().then((ca) => withMachineCA(gen.controlplane, ca)), "machine.ca.key", /curve "secp384r1"; only P-256/);
    await refuse(makeCA({ key: rsaKey(1024) }).then((ca) => withMachineCA(gen.controlplane, ca)), "machine.ca.key", /1024-bit RSA key/);
    const x448 = generateKeyPairSync("ed448").privateKey;
    const ca = await makeCA();
    const pem = `-----BEGIN PRIVATE KEY-----\n${x448.export({ type: "pkcs8", format: "der" }).toString("base64")}\n-----END PRIVATE KEY-----\n`;
    await refuse(withMachineCA(gen.controlplane, { crt: ca.crt, key: pem }), "machine.ca.key", /unsupported key type "ed448"/);
  });

  it("a CA certificate clients or the server would reject", async () => {
    const key = generateKeyPairSync("ed25519").privateKey;
    const keyPem = encodePrivateKeyPem(key);
    await refuse(makeCA({ key, isCA: false }).then((c) => withMachineCA(gen.controlplane, { crt: c.crt, key: keyPem })), "machine.ca.crt", /not a CA certificate/);
    await refuse(makeCA({ key, keyUsage: KeyUsage.digitalSignature }).then((c) => withMachineCA(gen.controlplane, c)), "machine.ca.crt", /lacks keyCertSign/);
    const day = 86_400_000;
    const expired = await makeCA({ notBefore: new Date(Date.now() - 10 * day), notAfter: new Date(Date.now() - day) });
    await refuse(withMachineCA(gen.controlplane, expired), "machine.ca.crt", /has expired/);
    const future = await makeCA({ notBefore: new Date(Date.now() + day), notAfter: new Date(Date.now() + 10 * day) });
    await refuse(withMachineCA(gen.controlplane, future), "machine.ca.crt", /not valid yet/);
    // The node's clock decides: the generated CA is fine now and expired in 20 years.
    await refuse(gen.controlplane, "machine.ca.crt", /has expired/, new Date(Date.now() + 20 * 365 * day));
    const big = await makeCA({ organizations: [Array(12_000).fill("x").join("")] });
    await refuse(withMachineCA(gen.controlplane, big), "machine.ca.crt", /an OS CA certificate may be at most 8 KiB/);
  });

  it("certSANs that are not valid IP addresses or DNS names", () => {
    const cases: [string, RegExp][] = [
      ["999.999.999.999", /is not a valid IP address/],
      ["::::", /is not a valid IP address/],
      ["fd00::/64", /is not a valid IP address/],
      ["fe80::1%eth0", /zone id/],
      ["::ffff:1.2.3.4", /embedded IPv4/],
      ["01.2.3.4", /is not a valid IP address/],
      ["bad name", /not a valid DNS name/],
      ["héllo.example", /not a valid DNS name/],
      ["a..b", /not a valid DNS name/],
      ["-a.example", /not a valid DNS name/],
      [`${"a".repeat(64)}.example`, /label longer than 63/],
      [Array(60).fill("abcd").join("."), /at most 253/],
    ];
    for (const [san, match] of cases) {
      const text = editV1(gen.controlplane, (v) => {
        v.machine.certSANs = ["10.0.0.1", san];
      });
      const p = problems(text);
      expect(p, san).toHaveLength(1);
      expect(p[0], san).toMatch(/^machine\.certSANs\[1\]: /);
      expect(p[0], san).toMatch(match);
    }
  });

  it("more certSANs than fit a TLS handshake", () => {
    // Flow style: 20,000 entries stay within the YAML token budget, so this bound is the one that answers.
    const list = Array.from({ length: 20_000 }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    const many = gen.controlplane.replace("certSANs: []", `certSANs: [${list.join(",")}]`);
    expect(problems(many)).toEqual(["machine.certSANs: 20000 entries; at most 512 fit in the API server certificate"]);
    const long = editV1(gen.controlplane, (v) => {
      v.machine.certSANs = Array.from({ length: 100 }, (_, i) => `${"n".repeat(60)}.${"m".repeat(60)}.${"o".repeat(60)}.x${i}`);
    });
    expect(problems(long)).toEqual([expect.stringMatching(/^machine\.certSANs: 18\.\d KiB of names; at most 16 KiB/)]);
  });

  it("a hostname that cannot be a certificate name", () => {
    const text = editV1(gen.controlplane, (v) => {
      v.machine.network = { hostname: "my host" };
    });
    expect(problems(text)).toEqual([expect.stringMatching(/^machine\.network\.hostname: "my host" is not a valid DNS name/)]);
  });

  it("acceptedCAs without machine.ca, and a key without a certificate", async () => {
    const ca = await makeCA();
    const text = editV1(gen.worker, (v) => {
      v.machine.ca = undefined;
      v.machine.acceptedCAs = [{ crt: b64(ca.crt) }];
    });
    expect(problems(text)).toEqual([expect.stringMatching(/^machine\.ca\.crt: the OS CA certificate is required/)]);
  });

  it("other certificate and key pairs must parse and match", async () => {
    const a = await makeCA();
    const b = await makeCA();
    const text = editV1(gen.controlplane, (v) => {
      v.cluster.ca = { crt: b64(a.crt), key: b64(b.key) };
      v.cluster.serviceAccount = { key: b64("not a key") };
      (v.cluster.etcd as Record<string, unknown>).ca = { crt: b64("garbage"), key: b64(a.key) };
      v.machine.acceptedCAs = [{ crt: b64(a.crt) }, { crt: b64(a.key) }];
    });
    expect(problems(text)).toEqual([
      "cluster.ca.key: the key does not belong to cluster.ca.crt",
      "cluster.etcd.ca.crt: not a PEM certificate (expected base64 of a '-----BEGIN CERTIFICATE-----' block)",
      "cluster.serviceAccount.key: not a PEM private key (expected base64 of a '-----BEGIN ... PRIVATE KEY-----' block)",
      'machine.acceptedCAs[1].crt: expected a CERTIFICATE PEM block, found "ED25519 PRIVATE KEY"',
    ]);
  });

  it("machine.files beyond 1 MiB in total", () => {
    const text = editV1(gen.controlplane, (v) => {
      v.machine.files = [0, 1].map((i) => ({ content: "x".repeat(600 * 1024), path: `/var/f${i}`, op: "create", permissions: 0o644 }));
    });
    expect(problems(text)).toEqual(["machine.files: the files hold 1.2 MiB of contents; at most 1 MiB in total (larger files belong on a disk)"]);
  });

  it("a PEM text with thousands of unterminated blocks is refused without rescanning it per block", () => {
    const text = editV1(gen.controlplane, (v) => {
      v.machine.ca = { crt: b64("-----BEGIN CERTIFICATE-----\nAAAA\n".repeat(40_000)), key: (v.machine.ca as { key: string }).key };
    });
    expect(problems(text)).toContain("machine.ca.crt: expected exactly one PEM certificate block, found 40000");
  });
});

describe("admitted (for configs read back at boot)", () => {
  it("returns an admissible config and throws, listing why, for one that is not", async () => {
    const cfg = loadConfig(gen.controlplane);
    expect(admitted(cfg)).toBe(cfg);
    const later = new Date(Date.now() + 20 * 365 * 86_400_000);
    expect(() => admitted(cfg, { now: later })).toThrow(/^machine\.ca\.crt: the CA certificate has expired/);
    const bad = loadConfig(editV1(gen.controlplane, (v) => void (v.machine.certSANs = ["::::"])));
    expect(() => admitted(bad)).toThrow(ConfigValidationError);
  });
});

