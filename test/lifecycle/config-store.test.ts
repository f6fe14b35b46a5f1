/** The config store on the in-memory filesystem: atomic writes, leftovers of a cut write removed at init. */
import { describe, expect, it } from "vitest";
import { MemoryFiles } from "../../src/host/files/index.js";
import { ConfigStore } from "../../src/lifecycle/config-store.js";

describe("ConfigStore", () => {
  it("writes each document atomically and reads it back; a missing one is undefined", async () => {
    const files = new MemoryFiles();
    const store = new ConfigStore("/state", files);
    await store.init();
    expect(await store.readActive()).toBeUndefined();
    await store.writeActive(new TextEncoder().encode("machine: {}\n"));
    expect(new TextDecoder().decode(await store.readActive())).toBe("machine: {}\n");
    expect(files.ops.filter((o) => o.startsWith("rename"))).toEqual([expect.stringMatching(/^rename \/state\/\.config\.yaml\.[0-9a-f]+\.tmp -> \/state\/config\.yaml$/)]);
    expect(files.ops.at(-1)).toBe("sync /state");
  });

  it("removes temporaries of an interrupted write at init, and wipes both documents", async () => {
    const files = new MemoryFiles().addFile("/state/.config.yaml.0123456789ab.tmp", "half").addFile("/state/config.staged.yaml", "next").addFile("/state/other", "kept");
    const store = new ConfigStore("/state", files);
    await store.init();
    expect((await files.readdir("/state")).sort()).toEqual(["config.staged.yaml", "other"]);
    await store.writeActive(new Uint8Array([1]));
    await store.wipe();
    expect(await files.readdir("/state")).toEqual(["other"]);
  });
});
