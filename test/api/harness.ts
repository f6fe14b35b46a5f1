/**
 * Starts a real local-mode node (real TLS, real gRPC) on a random loopback port with a temporary state
 * folder, and builds clients the way talosctl connects: --insecure for maintenance, mTLS with the
 * talosconfig credentials afterwards.
 */
import "reflect-metadata";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { parse } from "yaml";
import { runLocalNode, type LocalOptions, type RunningNode } from "../../src/pid1/local.js";
import { generateConfigs, type GeneratedConfigs } from "../../src/machinery/generate/index.js";
import { issueClientCert } from "../../src/machinery/pki/issue.js";
import { tlsKeyPem } from "../../src/machinery/pki/pem.js";
import { MachineService, ApplyConfigurationRequest_Mode } from "../../src/machinery/api/gen/machine/machine_pb.js";
import * as m from "../../src/machinery/api/gen/machine/machine_pb.js";
import { TestClient, insecureTls, mtls } from "../helpers/client.js";
import { EmptySchema } from "@bufbuild/protobuf/wkt";

export interface Harness {
  node: RunningNode;
  address: string;
  stateDir: string;
  stop(): Promise<void>;
}

/** Services (containerd, etcd) stay off unless a test asks for them. */
export async function startNode(extra: Partial<LocalOptions> = {}): Promise<Harness> {
  const stateDir = mkdtempSync(path.join(tmpdir(), "machined-api-"));
  const node = await runLocalNode({ stateDir, listen: { host: "127.0.0.1", port: 0 }, logLevel: "silent", services: false, ...extra }, false);
  return {
    node,
    address: `127.0.0.1:${node.port}`,
    stateDir,
    async stop() {
      await node.stop();
      rmSync(stateDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
    },
  };
}

let cached: GeneratedConfigs | undefined;
/** One generated cluster per test file (key generation is the slow part). */
export async function clusterConfigs(): Promise<GeneratedConfigs> {
  cached ??= await generateConfigs({ clusterName: "demo", endpoint: "https://127.0.0.1:6443", installDisk: "/dev/vda", talosVersion: "v1.13" });
  return cached;
}

export interface Creds {
  ca: string;
  crt: string;
  key: string;
}

export function talosconfigCreds(talosconfig: string): Creds {
  const doc = parse(talosconfig) as { context: string; contexts: Record<string, { ca: string; crt: string; key: string }> };
  const c = doc.contexts[doc.context];
  const d = (s: string) => Buffer.from(s, "base64").toString("utf8");
  return { ca: d(c.ca), crt: d(c.crt), key: tlsKeyPem(d(c.key)) };
}

/** A client certificate with the given roles from the cluster's OS CA. */
export async function roleCreds(cfgs: GeneratedConfigs, roles: string[]): Promise<Creds> {
  const admin = talosconfigCreds(cfgs.talosconfig);
  const osCA = { crt: cfgs.secrets.certs.os.crt, key: cfgs.secrets.certs.os.key };
  const c = await issueClientCert(osCA, { roles });
  return { ca: admin.ca, crt: c.crt, key: tlsKeyPem(c.key) };
}

export const insecureClient = (h: Harness) => new TestClient(h.address, insecureTls());
export const mtlsClient = (h: Harness, c: Creds) => new TestClient(h.address, mtls(c.ca, c.crt, c.key));

export function version(c: TestClient, metadata?: Record<string, string>) {
  return c.unary(MachineService, "Version", EmptySchema, m.VersionResponseSchema, {}, { metadata });
}

export function apply(c: TestClient, data: string | Uint8Array, mode = ApplyConfigurationRequest_Mode.AUTO, extra: { dryRun?: boolean; tryMs?: number } = {}) {
  return c.unary(MachineService, "ApplyConfiguration", m.ApplyConfigurationRequestSchema, m.ApplyConfigurationResponseSchema, {
    data: typeof data === "string" ? new TextEncoder().encode(data) : data,
    mode,
    dryRun: extra.dryRun ?? false,
    tryModeTimeout: extra.tryMs ? { seconds: BigInt(Math.floor(extra.tryMs / 1000)), nanos: (extra.tryMs % 1000) * 1e6 } : { seconds: 60n },
  });
}

/** Configures a node in maintenance mode as a control plane over the insecure API; the cluster it now belongs to. */
export async function applyControlPlane(h: Harness): Promise<GeneratedConfigs> {
  const cfgs = await clusterConfigs();
  const c = insecureClient(h);
  try {
    await apply(c, cfgs.controlplane);
  } finally {
    c.close();
  }
  return cfgs;
}

/** Poll until `fn` stops throwing (connections switch modes asynchronously). */
export async function eventually<T>(fn: () => Promise<T>, timeoutMs = 5000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > until) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
