/**
 * One path from the machine config to the machine (a control plane named n1.example.org, Debian's etcd on free
 * ports, no containerd): the etcd member is named by EtcdSpec (the short hostname), the API server certificate
 * carries the hostname and the FQDN, and a hostname change re-issues what derives from it without restarting etcd
 * (whose membership is fixed once it runs), as upstream. Needs etcd (not root).
 */
import * as tls from "node:tls";
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MachineService, ApplyConfigurationRequest_Mode as Mode } from "../../src/machinery/api/gen/machine/machine_pb.js";
import * as m from "../../src/machinery/api/gen/machine/machine_pb.js";
import * as cosi from "../../src/machinery/api/gen/cosi/state_pb.js";
import { loadConfig, parsePatch, patchConfig } from "../../src/machinery/config/index.js";
import { readSpec } from "../../src/machinery/resources/read.js";
import { EtcdSpecType } from "../../src/machinery/resources/types/etcd.js";
import type { TestClient } from "../helpers/client.js";
import { freePort, killByMarker, missing, startedPid, tempDir } from "../supervisor/helpers.js";
import { apply, clusterConfigs, eventually, insecureClient, mtlsClient, startNode, talosconfigCreds, version, type Harness } from "./harness.js";

const skip = missing({ bins: ["etcd", "etcdctl"] });
if (skip) console.log(`one-path: skipped (${skip})`);

const withHostname = async (name: string) =>
  new TextDecoder().decode(patchConfig(loadConfig((await clusterConfigs()).controlplane), [parsePatch(`machine:\n  network:\n    hostname: ${name}\n`)]).encode());

/** The server certificate the API presents right now. */
function presented(address: string): Promise<tls.PeerCertificate> {
  const [host, port] = address.split(":");
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host, port: Number(port), rejectUnauthorized: false, ALPNProtocols: ["h2"] }, () => {
      resolve(s.getPeerCertificate());
      s.destroy();
    });
    s.on("error", reject);
  });
}

describe.skipIf(!!skip)("one path from the config to the machine", () => {
  let h: Harness;
  let admin: TestClient;
  let work: string;

  beforeAll(async () => {
    work = tempDir("one-path");
    const [clientPort, peerPort] = [await freePort(), await freePort()];
    h = await startNode({
      services: true,
      serviceOptions: {
        containerd: false,
        etcd: { clientPort, peerPort, health: { initialDelayMs: 100, periodMs: 500, timeoutMs: 5000 }, gracefulStopMs: 5000 },
      },
    });
    const c = insecureClient(h);
    await apply(c, await withHostname("n1.example.org"), Mode.AUTO);
    c.close();
    admin = mtlsClient(h, talosconfigCreds((await clusterConfigs()).talosconfig));
    await eventually(() => version(admin), 15_000);
  }, 60_000);
  afterAll(async () => {
    admin?.close();
    const dir = h?.stateDir;
    await h?.stop();
    rmSync(work, { recursive: true, force: true });
    if (dir) expect(killByMarker(dir)).toEqual([]);
  });

  it("names the etcd member n1 and runs etcd as EtcdSpec says", async () => {
    await admin.unary(MachineService, "Bootstrap", m.BootstrapRequestSchema, m.BootstrapResponseSchema, {});
    await eventually(async () => {
      const list = await admin.unary(MachineService, "EtcdMemberList", m.EtcdMemberListRequestSchema, m.EtcdMemberListResponseSchema, { queryLocal: true });
      expect(list.messages[0].members.map((x) => x.hostname)).toEqual(["n1"]);
    }, 30_000);
    const r = await admin.unary(cosi.State, "Get", cosi.GetRequestSchema, cosi.GetResponseSchema, { namespace: "etcd", type: "EtcdSpecs.etcd.talos.dev", id: "etcd" });
    expect(r.resource?.spec?.yamlSpec).toContain("name: n1\n");
    const spec = readSpec(h.node.state, EtcdSpecType, "etcd")!;
    // The flags the process was started with are the spec's.
    const etcd = h.node.services.etcd!;
    expect(etcd.args()).toContain("--name=n1");
    expect(etcd.args().find((a) => a.startsWith("--initial-advertise-peer-urls="))).toContain(spec.advertisedAddresses[0]);
  }, 60_000);

  it("presents an API certificate for n1 and n1.example.org", async () => {
    const cert = await presented(h.address);
    expect(cert.subject.CN).toBe("n1.example.org");
    expect((cert.subjectaltname ?? "").split(", ")).toEqual(expect.arrayContaining(["DNS:n1", "DNS:n1.example.org", "IP Address:127.0.0.1"]));
  });

  it("a new hostname re-issues the certificates and the spec, and restarts neither etcd nor the API", async () => {
    const pid = startedPid(h.node.services.supervisor, "etcd");
    await apply(admin, await withHostname("n2.example.org"), Mode.NO_REBOOT);
    await eventually(async () => expect((await presented(h.address)).subject.CN).toBe("n2.example.org"), 15_000);
    expect(readSpec(h.node.state, EtcdSpecType, "etcd")!.name).toBe("n2");
    expect(startedPid(h.node.services.supervisor, "etcd")).toBe(pid);
    expect(h.node.services.supervisor.info("etcd")?.state).toBe("Running");
    // The admin connection made before the change still works: the certificate was rotated, not the listener reset.
    await version(admin);
  }, 60_000);
});
