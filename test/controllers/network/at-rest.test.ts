/**
 * Real OS: the network controllers with the real observers (rtnetlink, inotify, the hostname sysctl's
 * poll notification) on a network namespace of our own, in observe mode. At rest nothing runs: no
 * child process in 10 s (counted from /proc: live children, and the page faults of reaped ones, which
 * any exec'd program makes by the hundred) and no reconcile; a kernel change is picked up at once
 * although nothing polls. Needs root and iproute2; skips itself (saying why) otherwise.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { networkControllers } from "../../../src/controllers/network/index.js";
import * as T from "../../../src/machinery/resources/types/network.js";
import { InMemoryState } from "../../../src/state/inmem.js";
import type { ControllerRuntime } from "../../../src/state/runtime/index.js";
import { eventually, ids, sleep, start } from "./helpers.js";

const NS = `machined-rest-${process.pid}`;
const NET = `10.250.${(process.pid % 250) + 1}`;
const ip = (...args: string[]) => execFileSync("ip", args, { stdio: ["ignore", "ignore", "pipe"] });

let skipReason = "";
if (process.getuid?.() !== 0) skipReason = "needs root to create a network namespace";
else {
  try {
    ip("-V");
  } catch {
    skipReason = "iproute2 (ip) is not installed";
  }
}

/** Children of this process: the ones alive now, and the minor faults of the ones already reaped. */
function childActivity() {
  const live = readdirSync("/proc/self/task").flatMap((t) => readFileSync(`/proc/self/task/${t}/children`, "utf8").trim().split(/\s+/).filter(Boolean));
  const stat = readFileSync("/proc/self/stat", "utf8").split(") ")[1].split(" ");
  return { live, reapedFaults: Number(stat[8]) + Number(stat[10]) };
}

describe.skipIf(Boolean(skipReason))("network observation at rest", () => {
  let rt: ControllerRuntime | undefined;
  let etc = "";
  const s = new InMemoryState();

  beforeAll(() => {
    ip("netns", "add", NS);
    // No duplicate address detection in our namespace: the links settle as soon as they are up.
    execFileSync("ip", ["netns", "exec", NS, "sysctl", "-q", "-w", "net.ipv6.conf.default.accept_dad=0", "net.ipv6.conf.all.accept_dad=0"]);
    ip("-n", NS, "link", "add", "mr0", "type", "veth", "peer", "name", "mr1");
    ip("-n", NS, "addr", "add", `${NET}.1/24`, "dev", "mr0");
    for (const l of ["lo", "mr0", "mr1"]) ip("-n", NS, "link", "set", l, "up");
    etc = mkdtempSync(path.join(tmpdir(), "machined-rest-"));
  });

  afterAll(async () => {
    await rt?.stop();
    try {
      ip("netns", "delete", NS);
    } catch {
      // already gone
    }
    rmSync(etc, { recursive: true, force: true });
  });

  it("spawns nothing and reconciles nothing in 10 s at rest, yet follows a kernel change at once", async () => {
    rt = start(s, networkControllers({ manage: false, netns: NS, etcRoot: etc }));
    await eventually(() => ids(s, T.AddressStatusType.type).includes(`mr0/${NET}.1/24`), 10_000, "addresses observed");
    await eventually(() => ids(s, T.RouteStatusType.type).includes(`inet4//${NET}.0/24/0`), 10_000, "routes observed");
    expect(ids(s, T.LinkStatusType.type)).toEqual(["lo", "mr0", "mr1"]);
    // The kernel is still busy with the new links for a moment (IPv6 link-local addresses, their DAD and
    // routes): wait until a whole second passes without a reconcile.
    const runs = () => Object.fromEntries(rt!.statuses().map((c) => [c.name, c.runs]));
    for (let last = JSON.stringify(runs()), i = 0; i < 20; i++) {
      await sleep(1000);
      const now = JSON.stringify(runs());
      if (now === last) break;
      last = now;
    }

    const before = { runs: runs(), children: childActivity() };
    await sleep(10_000);
    const after = { runs: runs(), children: childActivity() };
    expect(after.children.live).toEqual([]);
    expect(after.children.reapedFaults).toBe(before.children.reapedFaults);
    expect(after.runs).toEqual(before.runs);

    // Nothing polls, so only the kernel's notification can bring this address in.
    ip("-n", NS, "addr", "add", `${NET}.2/24`, "dev", "mr1");
    await eventually(() => ids(s, T.AddressStatusType.type).includes(`mr1/${NET}.2/24`), 5000, "new address");
    ip("-n", NS, "link", "set", "mr1", "down");
    await eventually(() => s.get({ namespace: "network", type: T.LinkStatusType.type, id: "mr1" })?.spec !== undefined &&
      (s.get({ namespace: "network", type: T.LinkStatusType.type, id: "mr1" })!.spec as T.LinkStatusSpec).operationalState === "down", 5000, "link down");
  }, 60_000);
});

if (skipReason) console.log(`skipping network-at-rest test: ${skipReason}`);
