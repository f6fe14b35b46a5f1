/** The configured node's RPCs over mTLS: apply modes, events, reboot, credentials, files, routing, bad input. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gunzipSync } from "node:zlib";
import { readFileSync } from "node:fs";
import * as grpc from "@grpc/grpc-js";
import { status } from "@grpc/grpc-js";
import { parse } from "yaml";
import { fromBinary } from "@bufbuild/protobuf";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { MachineService, ApplyConfigurationRequest_Mode as Mode } from "../../src/machinery/api/gen/machine/machine_pb.js";
import * as m from "../../src/machinery/api/gen/machine/machine_pb.js";
import { DataSchema } from "../../src/machinery/api/gen/common/common_pb.js";
import type { TestClient } from "../helpers/client.js";
import { applyPatches, parsePatch } from "../../src/machinery/config/patch/index.js";

const withHostname = (cfg: string, name: string) => applyPatches(cfg, [parsePatch(`machine:\n  network:\n    hostname: ${name}\n`)]);
import { apply, clusterConfigs, eventually, insecureClient, mtlsClient, roleCreds, startNode, talosconfigCreds, version, type Harness } from "./harness.js";

let h: Harness;
let admin: TestClient;
let cp: string;

beforeAll(async () => {
  h = await startNode();
  const cfgs = await clusterConfigs();
  cp = cfgs.controlplane;
  const c = insecureClient(h);
  await apply(c, cp);
  c.close();
  admin = mtlsClient(h, talosconfigCreds(cfgs.talosconfig));
  await eventually(() => version(admin));
});
afterAll(async () => {
  admin?.close();
  await h?.stop();
});

const events = (c: TestClient, req: Parameters<typeof c.stream>[4], limit: number) =>
  c.stream(MachineService, "Events", m.EventsRequestSchema, m.EventSchema, req, { limit, deadlineMs: 10_000 });

describe("ApplyConfiguration modes", () => {
  it("dry run reports a diff and changes nothing", async () => {
    const patched = withHostname(cp, "dry-run-host");
    const res = await apply(admin, patched, Mode.AUTO, { dryRun: true });
    const d = res.messages[0].modeDetails;
    expect(d.startsWith("Dry run summary:\nApplied configuration without a reboot")).toBe(true);
    expect(d).toContain("(skipped in dry-run).\nConfig diff:\n\n");
    expect(d).toContain("+        hostname: dry-run-host");
    expect(readFileSync(`${h.stateDir}/config.yaml`, "utf8")).not.toContain("dry-run-host");
  });

  it("dry run of the same config says No changes.", async () => {
    const res = await apply(admin, cp, Mode.NO_REBOOT, { dryRun: true });
    expect(res.messages[0].modeDetails).toContain("No changes.");
  });

  it("try mode applies, then reverts after the timeout", async () => {
    const tried = withHostname(cp, "tried-host");
    const res = await apply(admin, tried, Mode.TRY, { tryMs: 1500 });
    expect(res.messages[0].modeDetails).toContain("will be automatically reverted back in 1.5s");
    expect(h.node.node.activeConfig?.hostname()).toBe("tried-host");
    await eventually(async () => expect(h.node.node.activeConfig?.hostname()).toBeUndefined(), 6000);
  });

  it("staged mode persists for the next reboot only", async () => {
    const staged = withHostname(cp, "staged-host");
    const res = await apply(admin, staged, Mode.STAGED);
    expect(res.messages[0].modeDetails).toBe("Staged configuration to be applied after the next reboot");
    expect(h.node.node.activeConfig?.hostname()).toBeUndefined();
    expect(readFileSync(`${h.stateDir}/config.staged.yaml`, "utf8")).toContain("staged-host");
  });

  it("refuses a second concurrent apply with FailedPrecondition", async () => {
    const results = await Promise.allSettled([apply(admin, cp), apply(admin, cp), apply(admin, cp)]);
    const refused = results.filter((r) => r.status === "rejected");
    for (const r of refused) {
      expect((r as PromiseRejectedResult).reason).toMatchObject({
        code: status.FAILED_PRECONDITION,
        details: "another apply configuration is already in progress",
      });
    }
    expect(results.some((r) => r.status === "fulfilled")).toBe(true);
  });

  it("refuses a config without a v1alpha1 document, naming the likely mistake", async () => {
    await expect(apply(admin, "apiVersion: v1alpha1\nkind: KmsgLogConfig\nname: x\nurl: udp://127.0.0.1:1\n")).rejects.toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringContaining("doesn't contain v1alpha1 config"),
    });
  });

  it("refuses REBOOT mode outside maintenance", async () => {
    await expect(apply(admin, cp, Mode.REBOOT)).rejects.toMatchObject({ code: status.UNIMPLEMENTED });
  });

  it("reports wrong types with the YAML path", async () => {
    const bad = cp.replace("machine:\n", 'machine:\n    network:\n        interfaces:\n            - interface: eth0\n              mtu: "abc"\n');
    await expect(apply(admin, bad)).rejects.toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringContaining("machine.network.interfaces[0].mtu"),
    });
  });
});

describe("Events", () => {
  it("starts with an empty hello event, then the requested tail with talos/runtime type URLs", async () => {
    const got = await events(admin, { tailEvents: 3 }, 4);
    expect(got[0].data?.typeUrl).toBe("");
    expect(got[0].id).toMatch(/^[0-9a-v]{20}$/);
    for (const e of got.slice(1)) expect(e.data?.typeUrl).toMatch(/^talos\/runtime\/machine\./);
  });
});

describe("Reboot (simulated in local mode)", () => {
  it("returns an actor id, changes the boot id and comes back running and ready", async () => {
    const readBootId = async () =>
      Buffer.concat(
        (await admin.stream(MachineService, "Read", m.ReadRequestSchema, DataSchema, { path: "/proc/sys/kernel/random/boot_id" })).map((d) => d.bytes),
      ).toString();
    const before = await readBootId();
    const seen: string[] = [];
    // The simulated reboot drops connections, as a real one does: this stream ends with an error.
    const watcher = admin
      .stream(MachineService, "Events", m.EventsRequestSchema, m.EventSchema, { tailEvents: 0 }, {
        deadlineMs: 15_000,
        onMessage: (e) => seen.push(e.data?.typeUrl ?? ""),
        limit: 1000,
      })
      .catch(() => undefined);
    const res = await admin.unary(MachineService, "Reboot", m.RebootRequestSchema, m.RebootResponseSchema, {});
    const actor = res.messages[0].actorId;
    expect(actor).toMatch(/^[0-9a-f-]{36}$/);
    await eventually(async () => expect(await readBootId()).not.toBe(before), 15_000);
    await eventually(async () => {
      const ms = h.node.node.status.current;
      expect(ms.stage).toBe("running");
      expect(ms.status.ready).toBe(true);
    }, 10_000);
    await watcher;
    // After the reboot the event log starts again: a full replay holds this boot's RUNNING + ready.
    const replay: m.Event[] = [];
    // The stream stays open for live events; collect what arrives within the deadline.
    await admin
      .stream(MachineService, "Events", m.EventsRequestSchema, m.EventSchema, { tailEvents: -1 }, { deadlineMs: 1500, onMessage: (e) => replay.push(e) })
      .catch(() => undefined);
    const stages = replay
      .filter((e) => e.data?.typeUrl === "talos/runtime/machine.MachineStatusEvent")
      .map((e) => fromBinary(m.MachineStatusEventSchema, e.data!.value));
    expect(stages.some((s) => s.stage === m.MachineStatusEvent_MachineStage.RUNNING && s.status?.ready)).toBe(true);
    expect(stages.some((s) => s.stage === m.MachineStatusEvent_MachineStage.REBOOTING)).toBe(false);
    expect(seen.some((u) => u === "talos/runtime/machine.SequenceEvent")).toBe(true);
  });

  it("applies the staged config at the reboot", () => {
    expect(h.node.node.activeConfig?.hostname()).toBe("staged-host");
  });
});

describe("credentials", () => {
  it("Kubeconfig streams a tar.gz holding one kubeconfig for the cluster endpoint", async () => {
    const chunks = await admin.stream(MachineService, "Kubeconfig", EmptySchema, DataSchema, {});
    const tar = gunzipSync(Buffer.concat(chunks.map((c) => c.bytes)));
    expect(tar.subarray(0, 10).toString()).toBe("kubeconfig");
    const size = parseInt(tar.subarray(124, 135).toString(), 8);
    const kc = parse(tar.subarray(512, 512 + size).toString()) as { clusters: { cluster: { server: string } }[] };
    expect(kc.clusters[0].cluster.server).toBe("https://127.0.0.1:6443");
  });

  it("GenerateClientConfiguration issues a talosconfig with the asked roles that the node accepts", async () => {
    const res = await admin.unary(MachineService, "GenerateClientConfiguration", m.GenerateClientConfigurationRequestSchema, m.GenerateClientConfigurationResponseSchema, {
      roles: ["os:reader"],
      crtTtl: { seconds: 3600n },
    });
    const tc = new TextDecoder().decode(res.messages[0].talosconfig);
    expect(parse(tc).context).toBe("reader@demo");
    const reader = mtlsClient(h, talosconfigCreds(tc));
    expect((await version(reader)).messages[0].version?.tag).toBeTruthy();
    await expect(
      reader.unary(MachineService, "Reboot", m.RebootRequestSchema, m.RebootResponseSchema, {}),
    ).rejects.toMatchObject({ code: status.PERMISSION_DENIED });
    reader.close();
  });

  it("refuses a zero crt_ttl", async () => {
    await expect(
      admin.unary(MachineService, "GenerateClientConfiguration", m.GenerateClientConfigurationRequestSchema, m.GenerateClientConfigurationResponseSchema, { roles: ["os:admin"] }),
    ).rejects.toMatchObject({ code: status.INVALID_ARGUMENT, details: "crt_ttl should be positive" });
  });
});

describe("files and system information", () => {
  it("Read streams a file and answers NotFound for a missing one", async () => {
    const data = await admin.stream(MachineService, "Read", m.ReadRequestSchema, DataSchema, { path: `${h.stateDir}/config.yaml` });
    expect(Buffer.concat(data.map((d) => d.bytes)).toString()).toContain("machine:");
    await expect(admin.stream(MachineService, "Read", m.ReadRequestSchema, DataSchema, { path: "/nonexistent/x" })).rejects.toMatchObject({
      code: status.NOT_FOUND,
    });
  });

  it("List reports the root as . and children by relative name", async () => {
    const list = await admin.stream(MachineService, "List", m.ListRequestSchema, m.FileInfoSchema, { root: h.stateDir });
    expect(list[0].relativeName).toBe(".");
    expect(list[0].isDir).toBe(true);
    expect(list.map((f) => f.relativeName)).toContain("config.yaml");
  });

  it("Copy streams a tar.gz of a folder", async () => {
    const chunks = await admin.stream(MachineService, "Copy", m.CopyRequestSchema, DataSchema, { rootPath: h.stateDir });
    const tar = gunzipSync(Buffer.concat(chunks.map((c) => c.bytes)));
    expect(tar.toString("latin1")).toContain("config.yaml");
  });

  it("Memory always carries meminfo; Processes lists this process", async () => {
    const mem = await admin.unary(MachineService, "Memory", EmptySchema, m.MemoryResponseSchema, {});
    expect(mem.messages[0].meminfo?.memtotal).toBeGreaterThan(0n);
    const ps = await admin.unary(MachineService, "Processes", EmptySchema, m.ProcessesResponseSchema, {});
    expect(ps.messages[0].processes.some((p) => p.pid === process.pid)).toBe(true);
  });
});

describe("node routing metadata", () => {
  it("serves `node` naming this node locally and forwards another node (a control plane holds an impersonator certificate)", async () => {
    expect((await version(admin, { node: "127.0.0.1" })).messages[0].metadata).toBeUndefined();
    // Nothing listens on 127.0.99.99:50000: the dial's own error, as upstream's one-to-one proxy returns it.
    await expect(version(admin, { node: "127.0.99.99" })).rejects.toMatchObject({
      code: status.UNAVAILABLE,
      details: expect.stringContaining("dial tcp 127.0.99.99:50000: connect: connection refused"),
    });
  });

  it("echoes metadata.hostname for a legacy `nodes` request", async () => {
    const v = await version(admin, { nodes: "127.0.0.1" });
    expect(v.messages[0].metadata?.hostname).toBe("127.0.0.1");
  });
});

describe("bad input on the wire", () => {
  const raw = (method: string, body: Buffer) =>
    new Promise<grpc.ServiceError | null>((resolve) => {
      admin.raw.makeUnaryRequest(method, (b: Buffer) => b, (b: Buffer) => b, body, new grpc.Metadata(), {}, (err) => resolve(err));
    });

  it("a truncated protobuf is Internal with a message saying the request could not be decoded (as grpc-go answers)", async () => {
    const err = await raw("/machine.MachineService/ApplyConfiguration", Buffer.from([0x0a, 0xff, 0x01, 0x41]));
    expect(err?.code).toBe(status.INTERNAL);
    expect(err?.details).toMatch(/deserializ|malformed/i);
  });

  it("an unknown method is Unimplemented", async () => {
    const err = await raw("/machine.MachineService/NoSuchMethod", Buffer.alloc(0));
    expect(err?.code).toBe(status.UNIMPLEMENTED);
  });

  it("a message over 32 MiB is ResourceExhausted", async () => {
    const err = await raw("/machine.MachineService/ApplyConfiguration", Buffer.alloc(33 * 1024 * 1024));
    expect(err?.code).toBe(status.RESOURCE_EXHAUSTED);
  });

  it("a protobuf that decodes is still validated", () => {
    const bytes = Buffer.from([0x0a, 0x00]);
    expect(fromBinary(m.ApplyConfigurationRequestSchema, bytes).data.length).toBe(0);
  });
});

describe("roles", () => {
  it("an os:operator may reboot but not read files", async () => {
    const op = mtlsClient(h, await roleCreds(await clusterConfigs(), ["os:operator"]));
    await expect(op.stream(MachineService, "Read", m.ReadRequestSchema, DataSchema, { path: "/etc/hostname" })).rejects.toMatchObject({
      code: status.PERMISSION_DENIED,
    });
    op.close();
  });
});
