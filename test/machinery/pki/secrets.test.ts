import { X509Certificate } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import {
  generateSecrets, loadSecrets, secretsToYaml, SecretsValidationError, type SecretsBundle,
} from "../../../src/machinery/pki/secrets.js";
import { certOrganizations, CA_VALIDITY_MS, parsePrivateKeyPem, validity } from "../../../src/machinery/pki/index.js";
import { fixture, hasFixtures } from "./helpers.js";

let bundle: SecretsBundle;

beforeAll(async () => {
  bundle = await generateSecrets();
});

function loadError(text: string): SecretsValidationError {
  try {
    loadSecrets(text);
  } catch (e) {
    expect(e).toBeInstanceOf(SecretsValidationError);
    return e as SecretsValidationError;
  }
  throw new Error("expected loadSecrets to fail");
}

describe("generateSecrets", () => {
  it("produces upstream's fields and formats", () => {
    expect(bundle.secrets.bootstrapToken).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    expect(bundle.trustdInfo.token).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    for (const v of [bundle.cluster.id, bundle.cluster.secret, bundle.secrets.secretboxEncryptionSecret!]) {
      expect(Buffer.from(v, "base64")).toHaveLength(32);
      expect(Buffer.from(v, "base64").toString("base64")).toBe(v);
    }
    expect(bundle.secrets.aescbcEncryptionSecret).toBeUndefined();
  });

  it("makes the CAs with the right algorithms, subjects and labels", () => {
    const c = bundle.certs;
    expect(new X509Certificate(c.os.crt).publicKey.asymmetricKeyType).toBe("ed25519");
    expect(c.os.key).toMatch(/^-----BEGIN ED25519 PRIVATE KEY-----/);
    expect(certOrganizations(c.os.crt)).toEqual(["talos"]);
    for (const [pair, subject] of [
      [c.etcd, "O=etcd"],
      [c.k8s, "O=kubernetes"],
      [c.k8sAggregator, "CN=front-proxy"],
    ] as const) {
      const x = new X509Certificate(pair.crt);
      expect(x.subject).toBe(subject);
      expect(x.publicKey.asymmetricKeyType).toBe("ec");
      expect(pair.key).toMatch(/^-----BEGIN EC PRIVATE KEY-----/);
      const v = validity(pair.crt);
      expect(v.notAfter.getTime() - v.notBefore.getTime()).toBe(CA_VALIDITY_MS);
    }
    // Talos > 1.6 signs service-account tokens with RSA-4096
    expect(c.k8sServiceAccount.key).toMatch(/^-----BEGIN RSA PRIVATE KEY-----/);
    expect(parsePrivateKeyPem(c.k8sServiceAccount.key).asymmetricKeyDetails?.modulusLength).toBe(4096);
  });

  it("can follow older contracts: ECDSA service-account key, AES-CBC secret", async () => {
    const old = await generateSecrets({ serviceAccountKey: "ecdsa", encryption: "aescbc" });
    expect(old.certs.k8sServiceAccount.key).toMatch(/^-----BEGIN EC PRIVATE KEY-----/);
    expect(old.secrets.aescbcEncryptionSecret).toBeDefined();
    expect(old.secrets.secretboxEncryptionSecret).toBeUndefined();
    expect(loadSecrets(secretsToYaml(old))).toEqual(old);
  });
});

describe("secrets YAML", () => {
  it("writes upstream's layout and loads back to the same bundle", () => {
    const text = secretsToYaml(bundle);
    const doc = parse(text);
    expect(Object.keys(doc)).toEqual(["cluster", "secrets", "trustdinfo", "certs"]);
    expect(Object.keys(doc.secrets)).toEqual(["bootstraptoken", "secretboxencryptionsecret"]);
    expect(Object.keys(doc.certs)).toEqual(["etcd", "k8s", "k8saggregator", "k8sserviceaccount", "os"]);
    expect(text).toMatch(/^cluster:\n {4}id: /);
    expect(Buffer.from(doc.certs.os.key, "base64").toString()).toBe(bundle.certs.os.key);
    expect(loadSecrets(text)).toEqual(bundle);
  });

  it.skipIf(!hasFixtures)("loads the upstream fixture secrets.yaml", () => {
    const b = loadSecrets(fixture("configs", "secrets.yaml"));
    expect(b.cluster.id).toBe("cgvhCbucls-WqkESDTRqykFgb4hROI4cBpgB0YJLLtM=");
    expect(b.secrets.bootstrapToken).toBe("2psnp2.lry8e9gycdix3bpa");
    expect(b.trustdInfo.token).toBe("oamejv.9tk1nhuwnlc2nghf");
    expect(b.certs.os.key).toMatch(/^-----BEGIN ED25519 PRIVATE KEY-----/);
    expect(b.certs.k8sServiceAccount.key).toMatch(/^-----BEGIN EC PRIVATE KEY-----/);
    // and writes it back unchanged
    expect(parse(secretsToYaml(b))).toEqual(parse(fixture("configs", "secrets.yaml")));
  });

  it.skipIf(!hasFixtures)("rejects invalid-secrets.yaml with upstream's list of what is wrong", () => {
    const err = loadError(fixture("configs", "invalid-secrets.yaml"));
    expect(err.problems).toEqual([
      "cluster.secret is required",
      "one of [secrets.secretboxencryptionsecret, secrets.aescbcencryptionsecret] is required",
      "trustdinfo is required",
      "certs.etcd is invalid: failed to parse PEM block",
      "certs.k8saggregator is required",
      'certs.os is invalid: unsupported key type: "CERTIFICATE"',
    ]);
    expect(err.message).toBe(
      'invalid secrets bundle: 6 errors occurred:\n\t* cluster.secret is required\n\t* one of [secrets.secretboxencryptionsecret, secrets.aescbcencryptionsecret] is required\n\t* trustdinfo is required\n\t* certs.etcd is invalid: failed to parse PEM block\n\t* certs.k8saggregator is required\n\t* certs.os is invalid: unsupported key type: "CERTIFICATE"\n\n',
    );
  });

  it("names the field for bad base64, wrong types, both encryption secrets and a broken certificate", () => {
    const doc = parse(secretsToYaml(bundle));
    doc.certs.k8s.key = "***";
    doc.cluster.id = 42;
    doc.secrets.aescbcencryptionsecret = "x";
    doc.certs.etcd.crt = Buffer.from("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n").toString("base64");
    delete doc.certs.k8sserviceaccount;
    const err = loadError(stringify(doc));
    expect(err.problems).toEqual([
      "cluster.id must be a string",
      "certs.k8s.key is invalid: illegal base64 data",
      "cluster.id is required",
      "only one of [secrets.secretboxencryptionsecret, secrets.aescbcencryptionsecret] is allowed",
      expect.stringMatching(/^certs\.etcd is invalid: failed to parse certificate: /),
      "certs.k8s is invalid: failed to parse PEM block",
      "certs.k8sserviceaccount is required",
    ]);
  });

  it("rejects documents that are not a mapping or not YAML", () => {
    expect(loadError("- a\n- b\n").problems).toEqual(["secrets bundle must be a YAML mapping"]);
    expect(loadError("a: [\n").problems[0]).toMatch(/^secrets bundle is not valid YAML: /);
    expect(loadError("{}\n").problems).toEqual([
      "cluster is required",
      "secrets is required",
      "trustdinfo is required",
      "certs is required",
    ]);
  });
});
