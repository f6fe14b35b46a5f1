/** time.SyncController: host clock in local mode, NTP state otherwise, epoch on wall clock jumps. */
import { describe, expect, it } from "vitest";
import { TimeStatusType } from "../../../src/machinery/resources/types/time.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import { timeSyncController, EPOCH_LIMIT_MS } from "../../../src/controllers/time/sync.js";
import { controlPlaneConfig, eventually, publishConfig, spec, startRuntime } from "../runtime/harness.js";

const status = (s: InMemoryState) => spec<{ synced: boolean; epoch: number; syncDisabled: boolean }>(s, "runtime", TimeStatusType.type, "node");

describe("time.SyncController", () => {
  it("local mode: the host clock is trusted (synced, sync disabled)", async () => {
    const s = new InMemoryState();
    startRuntime(s, [timeSyncController()]);
    await eventually(() => !!status(s), 2000, "status");
    expect(status(s)).toEqual({ synced: true, epoch: 0, syncDisabled: true });
  });

  it("with an NTP client: follows its sync state unless the config disables sync", async () => {
    let synced = false;
    const s = new InMemoryState();
    startRuntime(s, [timeSyncController({ synced: () => synced, checkIntervalMs: 5 })]);
    await eventually(() => !!status(s), 2000, "status");
    expect(status(s)).toEqual({ synced: false, epoch: 0, syncDisabled: false });
    synced = true;
    await eventually(() => status(s)?.synced === true, 2000, "synced");
    synced = false;
    publishConfig(s, controlPlaneConfig({ machineExtra: "  time:\n    disabled: true" }));
    await eventually(() => status(s)?.syncDisabled === true, 2000, "disabled");
    expect(status(s)!.synced).toBe(true);
  });

  it("increments the epoch when the wall clock jumps by more than 15 minutes", async () => {
    let wall = 1_000_000;
    let mono = 0;
    const s = new InMemoryState();
    startRuntime(s, [timeSyncController({ wallNow: () => wall, monoNow: () => mono, checkIntervalMs: 5 })]);
    await eventually(() => !!status(s), 2000, "status");
    wall += 60_000;
    mono += 60_000; // Normal time passing: no jump.
    await new Promise((r) => setTimeout(r, 30));
    expect(status(s)!.epoch).toBe(0);
    wall += EPOCH_LIMIT_MS + 60_000;
    await eventually(() => status(s)?.epoch === 1, 2000, "epoch 1");
  });
});
