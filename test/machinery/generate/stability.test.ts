/**
 * Compares our output with upstream's recorded `gen config` output for every version contract (the testdata of
 * upstream's config encoding stability test, "base" flavor: cluster "base", endpoint https://base:6443, Kubernetes
 * 1.28.0, no install disk or image). Needs the upstream source tree; skips itself, saying so, when it is absent.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { machineDocuments, encodeDocuments, VersionContract } from "../../../src/machinery/generate/index.js";
import type { GenInput } from "../../../src/machinery/generate/input.js";
import { loadSecrets } from "../../../src/machinery/pki/index.js";

const UPSTREAM = process.env.TALOS_SRC ?? "/tmp/talos-src";
const DIR = join(UPSTREAM, "pkg/machinery/config/types/v1alpha1/testdata/stability");
const present = existsSync(join(DIR, "secrets.yaml"));
if (!present) console.warn(`upstream stability testdata not found at ${DIR} (set TALOS_SRC): skipping`);

const VERSIONS = ["v1.3", "v1.4", "v1.5", "v1.6", "v1.7", "v1.8", "v1.9", "v1.10", "v1.11", "v1.12", "v1.13", "v1.14", "v1.15"];

function input(version: string): GenInput {
  return {
    contract: VersionContract.parse(version),
    clusterName: "base",
    endpoint: "https://base:6443",
    endpointHost: "base",
    kubernetesVersion: "1.28.0",
    installDisk: "",
    installImage: "",
    additionalSans: [],
    dnsDomain: "cluster.local",
    podSubnets: ["10.244.0.0/16"],
    serviceSubnets: ["10.96.0.0/12"],
    secrets: loadSecrets(readFileSync(join(DIR, "secrets.yaml"), "utf8")),
    discovery: true,
    allowSchedulingOnControlPlanes: false,
    debug: false,
  };
}

describe.skipIf(!present)("output matches upstream's recorded gen config output", () => {
  const cases = VERSIONS.flatMap((v) => (["controlplane", "worker"] as const).map((t) => [v, t] as const)).filter(([v, t]) =>
    existsSync(join(DIR, v, `base-${t}.yaml`)),
  );

  it.each(cases)("%s %s", (version, type) => {
    const expected = parseAllDocuments(readFileSync(join(DIR, version, `base-${type}.yaml`), "utf8")).map((d) => d.toJS());
    const ours = parseAllDocuments(encodeDocuments(machineDocuments(input(version), type))).map((d) => d.toJS());
    expect(ours.map((d) => d.kind)).toEqual(expected.map((d) => d.kind));
    expect(ours).toEqual(expected);
  });

  it("the 1.14 worker config is byte-identical to upstream's", () => {
    const text = readFileSync(join(DIR, "v1.14", "base-worker.yaml"), "utf8");
    expect(encodeDocuments(machineDocuments(input("v1.14"), "worker"))).toBe(text);
  });
});
