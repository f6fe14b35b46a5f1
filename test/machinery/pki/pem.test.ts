import { createSecureContext } from "node:tls";
import { createPrivateKey as cryptoKey, generateKeyPairSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import {
  decodeAllPem, decodePem, decodeBase64Pair, encodePem, encodePrivateKeyPem, fromBase64Pem, loadBase64Pair,
  parsePrivateKeyPem, tlsCredentials, tlsKeyPem, toBase64Pem,
} from "../../../src/machinery/pki/index.js";
import { fixture, hasFixtures } from "./helpers.js";

// The upstream bundle, where the fixtures exist; otherwise the suite is skipped (the helper says why).
const secrets = (hasFixtures ? parse(fixture("configs", "secrets.yaml")) : { certs: { os: { key: "", crt: "" }, etcd: { key: "" } } }) as {
  certs: Record<string, { crt?: string; key: string }>;
};
const osKeyPem = hasFixtures ? fromBase64Pem(secrets.certs.os.key) : "";
const osCrtPem = hasFixtures ? fromBase64Pem(secrets.certs.os.crt!) : "";
const etcdKeyPem = hasFixtures ? fromBase64Pem(secrets.certs.etcd.key) : "";

describe.skipIf(!hasFixtures)("PEM with Talos labels", () => {
  it("reads the upstream ED25519 PRIVATE KEY (PKCS#8 inside) and writes it back byte for byte", () => {
    expect(osKeyPem).toMatch(/^-----BEGIN ED25519 PRIVATE KEY-----\n/);
    const key = parsePrivateKeyPem(osKeyPem);
    expect(key.asymmetricKeyType).toBe("ed25519");
    expect(encodePrivateKeyPem(key)).toBe(osKeyPem);
  });

  it("reads the upstream EC PRIVATE KEY (SEC1) and writes it back byte for byte", () => {
    const key = parsePrivateKeyPem(etcdKeyPem);
    expect(key.asymmetricKeyType).toBe("ec");
    expect(key.asymmetricKeyDetails?.namedCurve).toBe("prime256v1");
    expect(encodePrivateKeyPem(key)).toBe(etcdKeyPem);
  });

  it("writes RSA keys as RSA PRIVATE KEY (PKCS#1) and reads them back", () => {
    // a small key is enough to test the label; bundles use 4096 bits
    const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 }).privateKey;
    const pem = encodePrivateKeyPem(rsa);
    expect(pem).toMatch(/^-----BEGIN RSA PRIVATE KEY-----\n/);
    expect(parsePrivateKeyPem(pem).asymmetricKeyType).toBe("rsa");
  });

  it("OpenSSL cannot load the Ed25519 label as is, but can after tlsKeyPem relabels it", () => {
    expect(() => cryptoKey(osKeyPem)).toThrow();
    const relabelled = tlsKeyPem(osKeyPem);
    expect(relabelled).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    expect(cryptoKey(relabelled).asymmetricKeyType).toBe("ed25519");
    expect(() => createSecureContext(tlsCredentials({ crt: osCrtPem, key: osKeyPem }))).not.toThrow();
  });

  it("leaves EC keys labelled as they are for TLS", () => {
    expect(tlsKeyPem(etcdKeyPem)).toBe(etcdKeyPem);
  });

  it("reports upstream's texts for bad keys", () => {
    expect(() => parsePrivateKeyPem("")).toThrow("failed to parse PEM block");
    expect(() => parsePrivateKeyPem(osCrtPem)).toThrow('unsupported key type: "CERTIFICATE"');
    expect(() => parsePrivateKeyPem(encodePem("ED25519 PRIVATE KEY", Buffer.from("junk")))).toThrow(
      /^failed to parse Ed25519 key: /,
    );
    // an EC key inside an Ed25519 label is a wrong key type, not a parse failure
    const ecAsPkcs8 = parsePrivateKeyPem(etcdKeyPem).export({ type: "pkcs8", format: "der" });
    expect(() => parsePrivateKeyPem(encodePem("ED25519 PRIVATE KEY", ecAsPkcs8))).toThrow("wrong key type");
  });

  it("encodes PEM with 64-column lines like Go and decodes several blocks", () => {
    const der = Buffer.alloc(100, 7);
    const pem = encodePem("CERTIFICATE", der);
    const lines = pem.trimEnd().split("\n");
    expect(lines[1]).toHaveLength(64);
    expect(decodePem(pem)?.der.equals(der)).toBe(true);
    expect(decodeAllPem(`junk\n${pem}${osCrtPem}`).map((b) => b.label)).toEqual(["CERTIFICATE", "CERTIFICATE"]);
    expect(decodePem("no pem here")).toBeUndefined();
  });

  it("round trips base64-of-PEM fields and loads a config pair", () => {
    expect(fromBase64Pem(toBase64Pem(osCrtPem))).toBe(osCrtPem);
    expect(() => fromBase64Pem("not base64!")).toThrow("illegal base64 data");
    const loaded = loadBase64Pair({ crt: secrets.certs.os.crt, key: secrets.certs.os.key }, "machine.ca");
    expect(loaded.cert.ca).toBe(true);
    expect(loaded.key.asymmetricKeyType).toBe("ed25519");
    expect(decodeBase64Pair({ crt: secrets.certs.os.crt, key: "" }).key).toBe("");
  });

  it("names the field when a pair does not load", () => {
    expect(() => loadBase64Pair({ crt: secrets.certs.os.crt, key: secrets.certs.etcd.key }, "machine.ca")).toThrow(
      "machine.ca: private key does not match the certificate",
    );
    expect(() => loadBase64Pair({ crt: secrets.certs.os.crt, key: "%%%" }, "machine.ca")).toThrow(
      "machine.ca.key: illegal base64 data",
    );
    expect(() => loadBase64Pair({ crt: secrets.certs.os.key, key: secrets.certs.os.key }, "machine.ca")).toThrow(
      "machine.ca.crt: failed to parse PEM block",
    );
  });
});
