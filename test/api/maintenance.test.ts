/** Maintenance mode and the switch to mutual TLS, over real TLS + gRPC on loopback. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as tls from "node:tls";
import { status } from "@grpc/grpc-js";
import { MachineService } from "../../src/machinery/api/gen/machine/machine_pb.js";
import * as m from "../../src/machinery/api/gen/machine/machine_pb.js";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { apply, clusterConfigs, eventually, insecureClient, mtlsClient, roleCreds, startNode, talosconfigCreds, version, type Harness } from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startNode();
  await clusterConfigs();
});
afterAll(async () => h?.stop());

function peerCert(port: number): Promise<tls.PeerCertificate & { alpn: string | false }> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: "127.0.0.1", port, rejectUnauthorized: false, ALPNProtocols: ["h2"] }, () => {
      const c = s.getPeerCertificate();
      const alpn = s.alpnProtocol ?? false;
      s.end();
      resolve({ ...c, alpn });
    });
    s.on("error", reject);
  });
}

describe("maintenance mode", () => {
  it("presents a self-signed maintenance certificate with ALPN h2 and asks for no client certificate", async () => {
    const c = await peerCert(h.node.port);
    expect(c.subject.CN).toBe("maintenance-service.talos.dev");
    expect(c.alpn).toBe("h2");
  });

  it("answers Version to an --insecure client, without RBAC", async () => {
    const c = insecureClient(h);
    const v = await version(c);
    expect(v.messages[0].version?.tag).toMatch(/^v\d+\.\d+\.\d+/);
    expect(v.messages[0].features).toBeUndefined();
    c.close();
  });

  it("refuses admin-only methods with PermissionDenied \"not authorized\"", async () => {
    const c = insecureClient(h);
    await expect(c.unary(MachineService, "Reboot", m.RebootRequestSchema, m.RebootResponseSchema, {})).rejects.toMatchObject({
      code: status.PERMISSION_DENIED,
      details: "not authorized",
    });
    const kube = c.stream(MachineService, "Kubeconfig", EmptySchema, (await import("../../src/machinery/api/gen/common/common_pb.js")).DataSchema, {});
    await expect(kube).rejects.toMatchObject({ code: status.PERMISSION_DENIED });
    c.close();
  });

  it("rejects a malformed config with InvalidArgument naming the problem", async () => {
    const c = insecureClient(h);
    await expect(apply(c, "machine: [unclosed")).rejects.toMatchObject({ code: status.INVALID_ARGUMENT });
    await expect(apply(c, "version: v2\nmachine: {}\ncluster: {}\n")).rejects.toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringContaining('unknown version "v2"'),
    });
    c.close();
  });
});

describe("apply-config --insecure, then mutual TLS", () => {
  it("applies the control-plane config and switches to mTLS in the same process", async () => {
    const cfgs = await clusterConfigs();
    const c = insecureClient(h);
    const res = await apply(c, cfgs.controlplane);
    expect(res.messages[0].mode).toBe(m.ApplyConfigurationRequest_Mode.NO_REBOOT);
    expect(res.messages[0].modeDetails).toBe("Applied configuration without a reboot");
    c.close();

    const admin = mtlsClient(h, talosconfigCreds(cfgs.talosconfig));
    const v = await eventually(() => version(admin));
    expect(v.messages[0].features?.rbac).toBe(true);
    admin.close();
  });

  it("no longer accepts clients without a certificate", async () => {
    const c = insecureClient(h);
    await expect(version(c)).rejects.toMatchObject({ code: status.UNAVAILABLE });
    c.close();
  });

  it("rejects a client certificate from another CA", async () => {
    const { generateConfigs } = await import("../../src/machinery/generate/index.js");
    const other = await generateConfigs({ clusterName: "other", endpoint: "https://127.0.0.1:6443" });
    const mine = talosconfigCreds((await clusterConfigs()).talosconfig);
    const foreign = talosconfigCreds(other.talosconfig);
    const c = mtlsClient(h, { ca: mine.ca, crt: foreign.crt, key: foreign.key });
    await expect(version(c)).rejects.toMatchObject({ code: status.UNAVAILABLE });
    c.close();
  });

  it("lets an os:reader read but not apply a config", async () => {
    const cfgs = await clusterConfigs();
    const c = mtlsClient(h, await roleCreds(cfgs, ["os:reader"]));
    expect((await version(c)).messages[0].version?.tag).toBeTruthy();
    await expect(apply(c, cfgs.controlplane)).rejects.toMatchObject({ code: status.PERMISSION_DENIED, details: "not authorized" });
    c.close();
  });

  it("rejects a client certificate whose extended key usage is not exactly clientAuth", async () => {
    const cfgs = await clusterConfigs();
    const { issueServerCert } = await import("../../src/machinery/pki/issue.js");
    const { tlsKeyPem } = await import("../../src/machinery/pki/pem.js");
    const serverish = await issueServerCert({ crt: cfgs.secrets.certs.os.crt, key: cfgs.secrets.certs.os.key }, { commonName: "x" });
    const ca = talosconfigCreds(cfgs.talosconfig).ca;
    const c = mtlsClient(h, { ca, crt: serverish.crt, key: tlsKeyPem(serverish.key) });
    await expect(version(c)).rejects.toMatchObject({ code: status.UNAVAILABLE });
    c.close();
  });

  it("serves the machine config as a resource whose spec is the YAML text", async () => {
    const cfgs = await clusterConfigs();
    const { State } = await import("../../src/machinery/api/gen/cosi/state_pb.js");
    const s = await import("../../src/machinery/api/gen/cosi/state_pb.js");
    const c = mtlsClient(h, talosconfigCreds(cfgs.talosconfig));
    const r = await c.unary(State, "Get", s.GetRequestSchema, s.GetResponseSchema, {
      namespace: "config",
      type: "MachineConfigs.config.talos.dev",
      id: "v1alpha1",
    });
    expect(r.resource?.metadata?.annotations["talos.dev/yaml-spec"]).toBe("1");
    expect(r.resource?.spec?.yamlSpec).toContain("type: controlplane");
    c.close();
  });
});

describe("a worker config (no OS CA key: its certificate must come from a control plane's trustd)", () => {
  it("keeps serving read-only calls and says plainly what it waits for", async () => {
    const w = await startNode();
    try {
      const cfgs = await clusterConfigs();
      const c = insecureClient(w);
      await apply(c, cfgs.worker);
      c.close();
      await eventually(async () => {
        const s = w.node.node.status.current;
        expect(s.status.ready).toBe(false);
        expect(s.status.unmetConditions.find((u) => u.name === "apid")?.reason).toMatch(/trustd/);
      });
      // It asks the cluster endpoint's trustd (nothing of this cluster listens there) and says so, with the failure.
      await eventually(async () => {
        const reason = w.node.node.status.current.status.unmetConditions.find((u) => u.name === "apid")?.reason;
        expect(reason).toMatch(/; asking 127\.0\.0\.1:50001; last attempt failed: 127\.0\.0\.1:50001: rpc error: code = \w+ desc = ./);
      }, 15_000);
      const reader = insecureClient(w);
      await eventually(async () => {
        await expect(reader.unary(MachineService, "Reboot", m.RebootRequestSchema, m.RebootResponseSchema, {})).rejects.toMatchObject({
          code: status.FAILED_PRECONDITION,
          details: expect.stringContaining("trustd"),
        });
      });
      expect((await version(reader)).messages[0].version?.tag).toBeTruthy();
      reader.close();
    } finally {
      await w.stop();
    }
  });
});
