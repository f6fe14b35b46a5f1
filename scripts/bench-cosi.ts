/**
 * The COSI contender of `npm run bench`: the real local-mode node (src/pid1/local.ts, the same wiring as
 * `machined start`) serving the real API over mTLS from a configured state folder, with a store that
 * the bench fills with N extra MountStatus resources (runtime namespace: a type no controller watches,
 * so only the API works when one changes) so List and Watch can be measured over 100 and 1,000 of them.
 * Bundled by scripts/bench.ts and run with plain node:
 *
 *   node bench-cosi.mjs <state-dir>      prints `cosi listening <port>`, then reads stdin lines:
 *   populate N                           exactly N bench resources exist → `populated N`
 *   bump                                 one bench resource changes (one event) → `bumped`
 *   exit                                 exits (lets --cpu-prof write its profile)
 */
import "reflect-metadata";
import { createInterface } from "node:readline";
import { newResource } from "../src/machinery/resources/resource.js";
import { RuntimeMountStatusType, type RuntimeMountStatusSpec } from "../src/machinery/resources/types/block.js";
import { runLocalNode } from "../src/pid1/local.js";

const OWNER = "bench.MountFiller";
const NS = RuntimeMountStatusType.defaultNamespace;
const TYPE = RuntimeMountStatusType.type;

const stateDir = process.argv[2];
const node = await runLocalNode({ stateDir, listen: { host: "127.0.0.1", port: 0 }, logLevel: "silent", services: false }, false);
const state = node.node.state;
console.log(`cosi listening ${node.port}`);

const id = (i: number) => `/var/lib/bench/${String(i).padStart(4, "0")}`;
const spec = (i: number, generation = 0): RuntimeMountStatusSpec => ({
  source: `/dev/mapper/bench-${i % 16}`,
  target: id(i),
  filesystemType: "xfs",
  options: ["rw", "relatime", "attr2", "inode64", `logbufs=${8 + (generation % 8)}`, "noquota"],
  encrypted: i % 2 === 0,
});

let count = 0;
let bumps = 0;
createInterface({ input: process.stdin }).on("line", (line) => {
  const [cmd, arg] = line.trim().split(/\s+/);
  if (cmd === "populate") {
    const n = Number(arg);
    for (; count < n; count++) state.create(newResource({ namespace: NS, type: TYPE, id: id(count) }, spec(count)), OWNER);
    for (; count > n; count--) state.destroy({ namespace: NS, type: TYPE, id: id(count - 1) }, OWNER);
    console.log(`populated ${count}`);
  } else if (cmd === "bump") {
    bumps++;
    state.apply(newResource({ namespace: NS, type: TYPE, id: id(0) }, spec(0, bumps)), OWNER);
    console.log("bumped");
  } else if (cmd === "exit") {
    process.exit(0);
  }
});
