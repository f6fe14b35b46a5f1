/** Parsing `ctr images ls` (the store behind ImageService/List; the real daemon is exercised in registry.test.ts). */
import { describe, expect, it } from "vitest";
import { parseImageRows } from "../../../src/lifecycle/images/store.js";

const D = `sha256:${"a".repeat(64)}`;

describe("parseImageRows", () => {
  it("reads name, digest and labels and skips the rounded size and platforms", () => {
    const out = [
      "REF                                   TYPE                                                 DIGEST  SIZE      PLATFORMS   LABELS",
      `127.0.0.1:5000/machined/installer:v2 application/vnd.oci.image.manifest.v1+json ${D} 150.6 MiB linux/amd64 -`,
      `registry.k8s.io/pause:3.9 application/vnd.oci.image.index.v1+json ${D} 311.6 KiB linux/amd64,linux/arm64 io.cri-containerd.image=managed,io.cri-containerd.pinned=pinned`,
      "",
    ].join("\n");
    expect(parseImageRows(out)).toEqual([
      { name: "127.0.0.1:5000/machined/installer:v2", digest: D, labels: {} },
      { name: "registry.k8s.io/pause:3.9", digest: D, labels: { "io.cri-containerd.image": "managed", "io.cri-containerd.pinned": "pinned" } },
    ]);
  });

  it("is empty for an empty store (header only)", () => {
    expect(parseImageRows("REF TYPE DIGEST SIZE PLATFORMS LABELS\n")).toEqual([]);
  });
});
