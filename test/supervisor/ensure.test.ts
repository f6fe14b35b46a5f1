/** Supervisor.ensure/remove: how service controllers run a service from a spec (GoroutineRunner: no processes). */
import { describe, expect, it } from "vitest";
import { Supervisor } from "../../src/supervisor/supervisor.js";
import { GoroutineRunner } from "../../src/supervisor/runners/goroutine.js";
import { noCgroups } from "../../src/host/cgroups.js";
import type { Service } from "../../src/supervisor/types.js";
import { waitUntil } from "./helpers.js";

/** A service that runs until stopped and counts its starts. */
function counted(id: string, starts: string[], tag: string): Service {
  return {
    id,
    runner: () =>
      new GoroutineRunner(id, async ({ signal }) => {
        starts.push(tag);
        await new Promise<void>((r) => signal.addEventListener("abort", () => r(), { once: true }));
      }),
  };
}

describe("Supervisor.ensure", () => {
  it("loads and starts once; the same fingerprint changes nothing; a new one restarts with the new definition", async () => {
    const sup = new Supervisor({ cgroups: noCgroups });
    const starts: string[] = [];
    await sup.ensure(counted("svc", starts, "a"), "v1");
    await waitUntil(() => sup.info("svc")?.state === "Running", 5000, "running");
    await sup.ensure(counted("svc", starts, "b"), "v1");
    await new Promise((r) => setTimeout(r, 50));
    expect(starts).toEqual(["a"]);
    await sup.ensure(counted("svc", starts, "c"), "v2");
    await waitUntil(() => starts.length === 2, 5000, "restart");
    expect(starts).toEqual(["a", "c"]);
    await sup.shutdown();
  });

  it("serialises bursts: the last definition wins; remove stops and forgets", async () => {
    const sup = new Supervisor({ cgroups: noCgroups });
    const starts: string[] = [];
    await Promise.all([1, 2, 3].map((n) => sup.ensure(counted("svc", starts, `v${n}`), `v${n}`)));
    await waitUntil(() => sup.info("svc")?.state === "Running" && starts.at(-1) === "v3", 5000, "last definition");
    await sup.remove("svc");
    expect(sup.has("svc")).toBe(false);
    await sup.remove("svc"); // removing what is not there is fine
    await sup.shutdown();
  });
});
