/**
 * Registry settings from the machine config (both the v1alpha1 `machine.registries` block and the Registry*
 * documents) and where a pull goes because of them: mirror endpoints in order, fallback, credentials by host,
 * and the hosts.toml files handed to containerd.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../../src/machinery/config/index.js";
import { basicCredentials, registriesOf } from "../../../src/machinery/config/registries.js";
import { parseImageRef, type RegistryRef } from "../../../src/lifecycle/images/image-ref.js";
import { endpointsFor, writeHostsDir } from "../../../src/lifecycle/images/registry-hosts.js";

const legacy = loadConfig(`version: v1alpha1
machine:
  type: worker
  token: abcdef.0123456789abcdef
  ca: { crt: "", key: "" }
  registries:
    mirrors:
      docker.io:
        endpoints: [http://10.0.2.2:5000, https://mirror.example/v2/proxy]
        overridePath: false
      ghcr.io:
        endpoints: [https://ghcr-mirror.example]
        skipFallback: true
    config:
      10.0.2.2:5000:
        auth: { username: bob, password: "s3cret:x" }
      mirror.example:
        auth: { auth: ${Buffer.from("alice:pw").toString("base64")} }
        tls: { insecureSkipVerify: true, ca: ${Buffer.from("-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n").toString("base64")} }
cluster:
  controlPlane: { endpoint: https://1.2.3.4:6443 }
`);

const docs = loadConfig(`apiVersion: v1alpha1
kind: RegistryMirrorConfig
name: "*"
endpoints:
  - url: https://harbor.example/v2/all
    overridePath: true
---
apiVersion: v1alpha1
kind: RegistryAuthConfig
name: harbor.example
username: carol
password: pw2
---
apiVersion: v1alpha1
kind: RegistryTLSConfig
name: harbor.example
ca: "-----BEGIN CERTIFICATE-----\\nY\\n-----END CERTIFICATE-----\\n"
`);

const reg = (s: string) => parseImageRef(s) as RegistryRef;
const never = () => false;

describe("registriesOf", () => {
  it("reads machine.registries: mirrors, credentials in both forms, TLS with the base64 CA decoded", () => {
    const r = registriesOf(legacy);
    expect(r.mirrors["docker.io"].endpoints.map((e) => e.url)).toEqual(["http://10.0.2.2:5000", "https://mirror.example/v2/proxy"]);
    expect(r.mirrors["ghcr.io"].skipFallback).toBe(true);
    expect(basicCredentials(r.auth["10.0.2.2:5000"])).toEqual({ username: "bob", password: "s3cret:x" });
    expect(basicCredentials(r.auth["mirror.example"])).toEqual({ username: "alice", password: "pw" });
    expect(r.tls["mirror.example"]).toEqual({ insecureSkipVerify: true, ca: "-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n" });
  });

  it("reads the RegistryMirrorConfig / RegistryAuthConfig / RegistryTLSConfig documents", () => {
    const r = registriesOf(docs);
    expect(r.mirrors["*"]).toEqual({ endpoints: [{ url: "https://harbor.example/v2/all", overridePath: true }], skipFallback: false });
    expect(r.auth["harbor.example"]).toEqual({ username: "carol", password: "pw2" });
    expect(r.tls["harbor.example"].ca).toMatch(/BEGIN CERTIFICATE/);
  });

  it("is empty without a config", () => {
    expect(registriesOf(undefined)).toEqual({ mirrors: {}, auth: {}, tls: {} });
  });
});

describe("endpointsFor", () => {
  it("tries the mirrors in order, then the registry itself, with credentials looked up by endpoint host", () => {
    const eps = endpointsFor(reg("alpine:3"), registriesOf(legacy), never);
    expect(eps.map((e) => e.base)).toEqual([
      "http://10.0.2.2:5000/v2/library/alpine",
      "https://mirror.example/v2/proxy/v2/library/alpine",
      "https://registry-1.docker.io/v2/library/alpine",
    ]);
    expect(eps.map((e) => basicCredentials(e.auth)?.username)).toEqual(["bob", "alice", undefined]);
    expect(eps.map((e) => e.mirror)).toEqual([true, true, false]);
  });

  it("never falls back with skipFallback, uses the * mirror for any registry, and honours overridePath", () => {
    expect(endpointsFor(reg("ghcr.io/siderolabs/installer:v1.13.0"), registriesOf(legacy), never).map((e) => e.base)).toEqual([
      "https://ghcr-mirror.example/v2/siderolabs/installer",
    ]);
    expect(endpointsFor(reg("quay.io/a/b:1"), registriesOf(docs), never).map((e) => e.base)).toEqual(["https://harbor.example/v2/all/a/b", "https://quay.io/v2/a/b"]);
  });

  it("speaks plain HTTP to the registry itself only when it is loopback or declared insecure", () => {
    const none = registriesOf(undefined);
    expect(endpointsFor(reg("127.0.0.1:5000/x/y:1"), none, () => true)[0].base).toBe("http://127.0.0.1:5000/v2/x/y");
    expect(endpointsFor(reg("reg.example/x/y:1"), none, never)[0].base).toBe("https://reg.example/v2/x/y");
  });

  it("names a mirror endpoint that is not an http(s) URL", () => {
    const r = { mirrors: { "docker.io": { endpoints: [{ url: "ftp://x", overridePath: false }], skipFallback: false } }, auth: {}, tls: {} };
    expect(() => endpointsFor(reg("alpine"), r, never)).toThrow(/registry mirror endpoint ftp:\/\/x for docker.io must be http:\/\/ or https:\/\//);
  });
});

describe("writeHostsDir", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "machined-hosts-"));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("writes one hosts.toml per mirrored registry in containerd's format, with TLS settings and CA files", async () => {
    const out = await writeHostsDir(join(dir, "hosts"), registriesOf(legacy));
    expect(out).toBe(join(dir, "hosts"));
    const dockerio = await readFile(join(dir, "hosts", "docker.io", "hosts.toml"), "utf8");
    expect(dockerio).toContain('server = "https://registry-1.docker.io"');
    expect(dockerio).toContain('[host."http://10.0.2.2:5000"]\n  capabilities = ["pull", "resolve"]');
    expect(dockerio).toMatch(/\[host\."https:\/\/mirror\.example\/v2\/proxy"\]\n {2}capabilities = \["pull", "resolve"\]\n {2}skip_verify = true\n {2}ca = ".*ca-1\.pem"/);
    expect(await readFile(join(dir, "hosts", "docker.io", "ca-1.pem"), "utf8")).toMatch(/BEGIN CERTIFICATE/);
    // skipFallback: the mirror stands in as the server, so containerd never reaches ghcr.io
    expect(await readFile(join(dir, "hosts", "ghcr.io", "hosts.toml"), "utf8")).toContain('server = "https://ghcr-mirror.example"');
  });

  it("writes _default for the * mirror, and nothing (removing old files) without mirrors", async () => {
    await writeHostsDir(join(dir, "h2"), registriesOf(docs));
    expect(await readFile(join(dir, "h2", "_default", "hosts.toml"), "utf8")).toContain("override_path = true");
    expect(await writeHostsDir(join(dir, "h2"), registriesOf(undefined))).toBeUndefined();
    await expect(readFile(join(dir, "h2", "_default", "hosts.toml"))).rejects.toThrow(/ENOENT/);
  });
});
