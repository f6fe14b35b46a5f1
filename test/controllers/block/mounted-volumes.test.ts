/**
 * PID 1's VolumeStatuses come from what is mounted where upstream puts STATE and EPHEMERAL. Before this source the
 * installed VM reported the 100 MiB STATE folder as EPHEMERAL, and `talosctl health` failed its disk-size check
 * ("ephemeral partition /system/state ... too small") on a node whose EPHEMERAL was a 5.8 GB partition.
 */
import { describe, expect, it } from "vitest";
import { MemoryFiles } from "../../../src/host/files/memory.js";
import { mountedVolumes } from "../../../src/controllers/block/volumes.js";

const line = (id: number, target: string, fstype: string, source: string) => `${id} 1 0:${id} / ${target} rw,relatime shared:${id} - ${fstype} ${source} rw`;

function installedVm(): MemoryFiles {
  const f = new MemoryFiles();
  f.addFile(
    "/proc/self/mountinfo",
    [line(20, "/", "squashfs", "/dev/loop0"), line(21, "/var", "tmpfs", "tmpfs"), line(22, "/var", "xfs", "/dev/vda7"), line(23, "/system/state", "ext4", "/dev/vda6")].join("\n") + "\n",
  );
  for (const [part, index, sectors] of [["vda6", 6, 204800], ["vda7", 7, 11370463]] as const) {
    const dir = `/sys/devices/pci0000:00/0000:00:03.0/virtio1/block/vda/${part}`;
    f.addFile(`${dir}/partition`, `${index}\n`).addFile(`${dir}/size`, `${sectors}\n`);
    f.addSymlink(`/sys/class/block/${part}`, dir);
  }
  return f;
}

describe("mountedVolumes (PID 1)", () => {
  it("reports EPHEMERAL as the partition on /var (the last mount there) and STATE as the one on /system/state", async () => {
    const vols = await mountedVolumes(installedVm())();
    expect(vols.map((v) => v.id)).toEqual(["EPHEMERAL", "STATE"]);
    const [eph, state] = vols.map((v) => v.spec);
    expect(eph).toMatchObject({ phase: "ready", type: "partition", location: "/dev/vda7", parentLocation: "/dev/vda", partitionIndex: 7, filesystem: "xfs", mountLocation: "/var", size: 11370463 * 512 });
    expect(eph.prettySize).toMatch(/GB$/);
    expect(state).toMatchObject({ type: "partition", location: "/dev/vda6", partitionIndex: 6, filesystem: "ext4", mountLocation: "/system/state", size: 204800 * 512 });
  });

  it("before an install: the tmpfs on /var, sized by its filesystem; no STATE volume when nothing is mounted there", async () => {
    const f = new MemoryFiles();
    f.fsSize = { blocks: 1000, bsize: 4096 };
    f.addFile("/proc/self/mountinfo", [line(20, "/", "squashfs", "/dev/loop0"), line(21, "/var", "tmpfs", "tmpfs")].join("\n") + "\n").addDir("/var");
    const vols = await mountedVolumes(f)();
    expect(vols).toEqual([{ id: "EPHEMERAL", spec: expect.objectContaining({ type: "tmpfs", location: "tmpfs", mountLocation: "/var", size: 4096000 }) }]);
  });
});
