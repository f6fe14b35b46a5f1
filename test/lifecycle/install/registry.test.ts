/**
 * Installer images from a real registry (Debian's docker-registry on loopback), built with umoci and pushed with
 * skopeo. Two pull paths: through containerd (a private daemon; `ctr images pull` + `ctr content get`) and
 * straight over the distribution API into our cache. Then a whole upgrade over the API through containerd.
 * Needs root (containerd) and the binaries; skips itself and says why otherwise.
 */
import "./env.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ContainerDriver, ContainerdNamespace } from "../../../src/machinery/api/gen/common/common_pb.js";
import * as m from "../../../src/machinery/api/gen/machine/machine_pb.js";
import { MachineService } from "../../../src/machinery/api/gen/machine/machine_pb.js";
import {
  ImageService,
  ImageServiceListRequestSchema,
  ImageServiceListResponseSchema,
  ImageServicePullRequestSchema,
  ImageServicePullResponseSchema,
  ImageServiceRemoveRequestSchema,
} from "../../../src/machinery/api/gen/machine/image_pb.js";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import { LifecycleService, LifecycleServiceUpgradeRequestSchema, LifecycleServiceUpgradeResponseSchema } from "../../../src/machinery/api/gen/machine/lifecycle_pb.js";
import { generateConfigs } from "../../../src/machinery/generate/index.js";
import { ImagePuller } from "../../../src/lifecycle/images/pull.js";
import { unpackInstaller, verifyInstaller } from "../../../src/lifecycle/install/payload.js";
import type { Ctr } from "../../../src/supervisor/index.js";
import { missingTools } from "../../boot/helpers.js";
import { TestClient, insecureTls, mtls } from "../../helpers/client.js";
import { apply, eventually, talosconfigCreds } from "../../api/harness.js";
import { ARCH } from "./fixtures.js";
import { freePort, pushInstaller, startContainerd, startRegistry, type Daemon } from "./daemons.js";
import { authProxy } from "./auth-proxy.js";
import type { Registries } from "../../../src/machinery/config/registries.js";
import { startInstallRig, type InstallRig } from "./node.js";

const missing = await missingTools("installer images from a registry", ["docker-registry", "umoci", "skopeo", "containerd", "ctr", "mkfs.vfat", "mcopy", "mkfs.xfs"]);
if (missing.length === 0 && process.getuid?.() !== 0) {
  missing.push("root");
  console.log("[skip] installer images from a registry: containerd needs root");
}

let dir: string;
let registry: Daemon & { host: string };
let containerd: Daemon & { ctr: Ctr };
let refV2: string;
let refV3: string;

beforeAll(async () => {
  if (missing.length > 0) return;
  dir = await mkdtemp(join(tmpdir(), "machined-registry-"));
  registry = await startRegistry(dir);
  containerd = await startContainerd(dir);
  refV2 = await pushInstaller(dir, registry.host, "v2", { version: "v2.0.0" });
  refV3 = await pushInstaller(dir, registry.host, "v3", { version: "v3.0.0" });
}, 120_000);

afterAll(async () => {
  await containerd?.stop();
  await registry?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.skipIf(missing.length > 0)("installer images from a registry", () => {
  it("pulls through containerd into the system namespace, then unpacks and verifies from its content store", async () => {
    const puller = new ImagePuller({ cacheDir: join(dir, "cache-ctrd"), arch: ARCH, ctr: () => containerd.ctr });
    const img = await puller.pull({ ref: refV2, namespace: "system" });
    expect(img.via).toBe("containerd");
    expect(img.name).toMatch(new RegExp(`^${registry.host}/machined/installer@sha256:[0-9a-f]{64}$`));
    expect(await containerd.ctr.exec(["images", "ls", "-q"], "system")).toContain(refV2);
    const p = await unpackInstaller(img, ARCH, join(dir, "unpacked-ctrd"));
    await verifyInstaller(p.dir, p.manifest);
    expect(p.manifest.version).toBe("v2.0.0");
  });

  it("pulls straight from the registry when containerd is not running, and reuses its cache", async () => {
    const puller = new ImagePuller({ cacheDir: join(dir, "cache-http"), arch: ARCH });
    const first: string[] = [];
    const img = await puller.pull({ ref: refV2, onProgress: (p) => first.push(p.status) });
    expect(img.via).toBe("registry");
    expect(first).toContain("download-complete");
    const again: string[] = [];
    const img2 = await puller.pull({ ref: refV2, onProgress: (p) => again.push(p.status) });
    expect(again).toEqual(["already-exists"]);
    expect(img2.digest).toBe(img.digest);
    const p = await unpackInstaller(img, ARCH, join(dir, "unpacked-http"));
    await verifyInstaller(p.dir, p.manifest);
    await expect(puller.pull({ ref: `${registry.host}/machined/installer:nope` })).rejects.toMatchObject({ status: 404 });
  });

  describe("mirrors and credentials from the machine config", () => {
    // an image name on a registry that does not exist: only the mirror can serve it
    const viaMirror = () => refV2.replace(registry.host, "mirror.invalid");
    const mirrorTo = (url: string, extra: Partial<Registries> = {}): Registries => ({
      mirrors: { "mirror.invalid": { endpoints: [{ url, overridePath: false }], skipFallback: true } },
      auth: {},
      tls: {},
      ...extra,
    });

    it("pulls through the mirror over HTTP, and through containerd (hosts.toml in --hosts-dir)", async () => {
      const http = new ImagePuller({ cacheDir: join(dir, "cache-mirror-http"), arch: ARCH });
      const a = await http.pull({ ref: viaMirror(), registries: mirrorTo(`http://${registry.host}`) });
      expect(a.via).toBe("registry");
      expect(a.name).toMatch(/^mirror\.invalid\/machined\/installer@sha256:/);
      const ctrd = new ImagePuller({ cacheDir: join(dir, "cache-mirror-ctrd"), arch: ARCH, ctr: () => containerd.ctr });
      const b = await ctrd.pull({ ref: viaMirror(), namespace: "system", registries: mirrorTo(`http://${registry.host}`) });
      expect(b.via).toBe("containerd");
      expect(b.digest).toBe(a.digest);
      expect(await containerd.ctr.exec(["images", "ls", "-q"], "system")).toContain(viaMirror());
    });

    it("names every endpoint it tried when none answers", async () => {
      const dead = `http://127.0.0.1:${await freePort()}`;
      const puller = new ImagePuller({ cacheDir: join(dir, "cache-mirror-dead"), arch: ARCH });
      const r = { ...mirrorTo(dead) };
      r.mirrors["mirror.invalid"] = { endpoints: [{ url: dead, overridePath: false }, { url: `http://${registry.host}/nothing-here`, overridePath: true }], skipFallback: true };
      await expect(puller.pull({ ref: viaMirror(), registries: r })).rejects.toThrow(
        new RegExp(`registry mirror\\.invalid \\(machined/installer\\): cannot reach ${dead}/v2/machined/installer: .*; GET http://${registry.host}/nothing-here/machined/installer/manifests/v2: not found`),
      );
    });

    it("sends configured credentials to a registry that asks for Basic auth or for a bearer token", async () => {
      for (const scheme of ["basic", "bearer"] as const) {
        const proxy = await authProxy(registry.host, scheme, "bob", "s3cret");
        try {
          const puller = new ImagePuller({ cacheDir: join(dir, `cache-auth-${scheme}`), arch: ARCH });
          const ref = refV2.replace(registry.host, proxy.host);
          await expect(puller.pull({ ref })).rejects.toThrow(scheme === "basic" ? /requires credentials and machine\.registries has none/ : /token request .* failed with HTTP 401/);
          const wrong = { mirrors: {}, tls: {}, auth: { [proxy.host]: { username: "bob", password: "nope" } } };
          await expect(puller.pull({ ref, registries: wrong })).rejects.toThrow(/401|unauthorized/);
          const img = await puller.pull({ ref, registries: { mirrors: {}, tls: {}, auth: { [proxy.host]: { auth: Buffer.from("bob:s3cret").toString("base64") } } } });
          expect(img.via).toBe("registry");
          expect(proxy.authorized).toBeGreaterThan(0);
        } finally {
          await proxy.close();
        }
      }
    });
  });

  describe("upgrade over the API through containerd", () => {
    let rig: InstallRig;
    let admin: TestClient;
    beforeAll(async () => {
      rig = await startInstallRig({ ctr: () => containerd.ctr });
      const cfgs = await generateConfigs({ clusterName: "demo", endpoint: "https://127.0.0.1:6443", installDisk: rig.disk, talosVersion: "v1.13" });
      const c = new TestClient(rig.address, insecureTls());
      await apply(c, cfgs.controlplane);
      c.close();
      const creds = talosconfigCreds(cfgs.talosconfig);
      admin = new TestClient(rig.address, mtls(creds.ca, creds.crt, creds.key));
    }, 120_000);
    afterAll(async () => {
      admin?.close();
      await rig?.stop();
    });

    it("lists the images in containerd's system namespace and removes one (ImageService List/Remove)", async () => {
      const containerdInst = { driver: ContainerDriver.CONTAINERD, namespace: ContainerdNamespace.NS_SYSTEM };
      await admin.stream(ImageService, "Pull", ImageServicePullRequestSchema, ImageServicePullResponseSchema, { containerd: containerdInst, imageRef: refV2 });
      const list = await admin.stream(ImageService, "List", ImageServiceListRequestSchema, ImageServiceListResponseSchema, { containerd: containerdInst });
      const v2 = list.find((i) => i.name === refV2);
      expect(v2?.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
      // manifest + config + layer: a few hundred bytes more than the layer alone
      expect(Number(v2?.size)).toBeGreaterThan(1000);
      expect(v2?.createdAt?.seconds).toBeGreaterThan(0n);
      await admin.unary(ImageService, "Remove", ImageServiceRemoveRequestSchema, EmptySchema, { containerd: containerdInst, imageRef: refV2 });
      const after = await admin.stream(ImageService, "List", ImageServiceListRequestSchema, ImageServiceListResponseSchema, { containerd: containerdInst });
      expect(after.map((i) => i.name)).not.toContain(refV2);
      await expect(
        admin.unary(ImageService, "Remove", ImageServiceRemoveRequestSchema, EmptySchema, { containerd: containerdInst, imageRef: refV2 }),
      ).rejects.toMatchObject({ code: 5, details: expect.stringMatching(/not found in namespace system/) });
    });

    it("pulls, writes slot B, reboots into it and blesses it", async () => {
      const containerdInst = { driver: ContainerDriver.CRI, namespace: ContainerdNamespace.NS_SYSTEM };
      const pull = await eventually(() => admin.stream(ImageService, "Pull", ImageServicePullRequestSchema, ImageServicePullResponseSchema, { containerd: containerdInst, imageRef: refV3 }), 10_000);
      expect(pull.at(-1)?.response).toMatchObject({ case: "name", value: expect.stringMatching(/@sha256:[0-9a-f]{64}$/) });
      const up = await admin.stream(LifecycleService, "Upgrade", LifecycleServiceUpgradeRequestSchema, LifecycleServiceUpgradeResponseSchema, { containerd: containerdInst, source: { imageName: refV3 } });
      const text = up.map((r) => (r.progress?.response.case === "message" ? r.progress.response.value : "")).join("\n");
      expect(text).toContain(`(via containerd)`);
      expect(up.at(-1)?.progress?.response).toEqual({ case: "exitCode", value: 0 });
      await admin.unary(MachineService, "Reboot", m.RebootRequestSchema, m.RebootResponseSchema, {});
      await eventually(async () => {
        expect(rig.install.boot.booted).toMatchObject({ slot: "B", osVersion: "v3.0.0", trial: false });
      }, 20_000);
    });
  });
});
