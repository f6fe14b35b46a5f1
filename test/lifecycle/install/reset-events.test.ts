/**
 * Reset as talosctl and upstream's API tests follow it on the Events stream (with the reset's actor id): the phases
 * up to `unmountSystem` (what base.APISuite.ResetNode waits for) and the `stopAllServices` task (what `talosctl
 * reset` waits for); and a graceful reset whose etcd leave fails: upstream's fatal NOOP event, a reboot, and the
 * node running its config again. Local mode, no system disk (the state folder is wiped).
 */
import "./env.js";
import { afterEach, describe, expect, it } from "vitest";
import { fromBinary } from "@bufbuild/protobuf";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import * as m from "../../../src/machinery/api/gen/machine/machine_pb.js";
import { MachineService } from "../../../src/machinery/api/gen/machine/machine_pb.js";
import { Code } from "../../../src/machinery/api/gen/common/common_pb.js";
import type { TestClient } from "../../helpers/client.js";
import { apply, clusterConfigs, eventually, insecureClient, mtlsClient, startNode, talosconfigCreds, version, type Harness } from "../../api/harness.js";
import type { StageName } from "../../../src/machinery/resources/types/runtime.js";

type Seen = { kind: string; name: string; action: number; error?: { code: number; message: string } };

function decode(e: m.Event): Seen | undefined {
  const d = e.data;
  if (!d) return undefined;
  if (d.typeUrl.endsWith("machine.PhaseEvent")) {
    const p = fromBinary(m.PhaseEventSchema, d.value);
    return { kind: "phase", name: p.phase, action: p.action };
  }
  if (d.typeUrl.endsWith("machine.TaskEvent")) {
    const t = fromBinary(m.TaskEventSchema, d.value);
    return { kind: "task", name: t.task, action: t.action };
  }
  if (d.typeUrl.endsWith("machine.SequenceEvent")) {
    const s = fromBinary(m.SequenceEventSchema, d.value);
    return { kind: "sequence", name: s.sequence, action: s.action, error: s.error ? { code: s.error.code, message: s.error.message } : undefined };
  }
  return undefined;
}

/** The reset's events (by actor id) until the simulated reboot drops the stream. */
function follow(c: TestClient, actor: string): Promise<Seen[]> {
  const seen: Seen[] = [];
  return c
    .stream(MachineService, "Events", m.EventsRequestSchema, m.EventSchema, { tailEvents: -1, withActorId: actor }, { deadlineMs: 10_000, onMessage: (e) => void (decode(e) && seen.push(decode(e)!)) })
    .then(
      () => seen,
      () => seen,
    );
}

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

async function configured(extra: Parameters<typeof startNode>[0] = {}) {
  h = await startNode(extra);
  const cfgs = await clusterConfigs();
  const c = insecureClient(h);
  await apply(c, cfgs.controlplane);
  c.close();
  const admin = mtlsClient(h, talosconfigCreds(cfgs.talosconfig));
  await eventually(() => version(admin));
  return admin;
}

describe("reset events", () => {
  it("reports the phases up to unmountSystem and stopAllServices, then wipes and reboots into maintenance", async () => {
    const admin = await configured();
    const res = await admin.unary(MachineService, "Reset", m.ResetRequestSchema, m.ResetResponseSchema, { graceful: false, reboot: true });
    const seen = await follow(admin, res.messages[0].actorId);
    admin.close();
    const started = seen.filter((s) => s.kind === "phase" && s.action === m.PhaseEvent_Action.START).map((s) => s.name);
    expect(started).toEqual(["stopEverything", "unmountSystem", "reset"]);
    expect(seen).toContainEqual({ kind: "task", name: "stopAllServices", action: m.TaskEvent_Action.START });
    expect(seen.some((s) => s.kind === "sequence" && s.error)).toBe(false);
    await eventually(async () => expect(h!.node.node.mode).toBe("maintenance"), 10_000);
  });

  it("a graceful reset whose etcd leave fails reports upstream's fatal error, reboots, and runs its config again", async () => {
    const admin = await configured({ install: { leaveEtcd: async () => Promise.reject(new Error("etcd cluster has only one member")) } });
    const stages: StageName[] = [];
    const unsubscribe = h!.node.node.state.watch({ namespace: "runtime", type: "MachineStatuses.runtime.talos.dev", id: "machine" }, (e) => {
      const st = (e.resource.spec as { stage?: StageName } | undefined)?.stage;
      if (st && stages.at(-1) !== st) stages.push(st);
    });
    const bootBefore = h!.node.node.bootId;
    const res = await admin.unary(MachineService, "Reset", m.ResetRequestSchema, m.ResetResponseSchema, { graceful: true, reboot: true });
    const seen = await follow(admin, res.messages[0].actorId);
    admin.close();
    expect(seen.filter((s) => s.kind === "phase" && s.action === m.PhaseEvent_Action.START).map((s) => s.name)).toEqual(["leave"]);
    const seq = seen.filter((s) => s.kind === "sequence");
    expect(seq.map((s) => s.action)).toEqual([m.SequenceEvent_Action.START, m.SequenceEvent_Action.STOP, m.SequenceEvent_Action.NOOP]);
    expect(seq[1].error).toBeUndefined();
    expect(seq[2].error).toEqual({ code: Code.FATAL, message: "sequence failed: error running phase 1 in reset sequence: task 1/1: failed, etcd cluster has only one member" });
    // Back up after the reboot, with the config (nothing was wiped) and ready to serve.
    await eventually(async () => {
      expect(h!.node.node.bootId).not.toBe(bootBefore);
      expect(h!.node.node.mode).toBe("configured");
      expect(h!.node.node.status.current.stage).toBe("running");
    }, 10_000);
    unsubscribe();
    expect(stages).toEqual(expect.arrayContaining(["resetting", "rebooting", "running"]));
    expect(stages.indexOf("resetting")).toBeLessThan(stages.indexOf("rebooting"));
    const again = mtlsClient(h!, talosconfigCreds((await clusterConfigs()).talosconfig));
    await eventually(() => again.unary(MachineService, "Version", EmptySchema, m.VersionResponseSchema, {}), 10_000);
    again.close();
  });
});
