/**
 * The OS image becomes a Kubernetes node in QEMU (TCG), amd64: the real agent as PID 1, the CRI containerd, etcd,
 * the kubelet and the control plane as static pods, every image pulled from the loopback registry (`make registry`
 * on 127.0.0.1:5000, which stands in for registry.k8s.io, ghcr.io and docker.io; the guest reaches it as
 * 10.0.2.2:5000 through QEMU's user networking) by a mirrors patch in the config.
 *   boot from the medium (maintenance) → ApplyConfiguration of a control-plane config (install disk /dev/vda, the
 *   installer pulled from the same registry as registry.local/machined/installer:vm-kube) → install + reboot → the
 *   installed system's mTLS API → Bootstrap → the node Ready → the API server, controller-manager, scheduler,
 *   kube-proxy, flannel and CoreDNS pods Running → the server-side health check with nothing skipped → a busybox
 *   Deployment from the registry runs and its log is read through the Kubernetes API.
 * The talosconfig and a host kubeconfig are written to build/amd64/vm/ while it runs, so a person can look in with
 * talosctl and kubectl (`-e 127.0.0.1:<forwarded port>` as printed).
 * Every wait is on a condition, bounded generously: under TCG on a loaded host a boot takes 25-75 s and the whole
 * run 10-30 min. Each step depends on the previous one; after a failure the rest are skipped naming it.
 * The figures (seconds from the first boot, RSS per component) are printed and written to
 * build/amd64/vm/kubernetes-timings.json. VM_SKIP_BUILD=1 reuses build/amd64 (disk.raw, the installer).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import type * as k8s from "@kubernetes/client-node";
import { MachineService } from "../../src/machinery/api/gen/machine/machine_pb.js";
import * as c from "../../src/machinery/api/gen/cluster/cluster_pb.js";
import { ClusterService } from "../../src/machinery/api/gen/cluster/cluster_pb.js";
import * as m from "../../src/machinery/api/gen/machine/machine_pb.js";
import { applyPatches, parsePatch } from "../../src/machinery/config/index.js";
import { generateConfigs, type GeneratedConfigs } from "../../src/machinery/generate/index.js";
import { apply, talosconfigCreds } from "../api/harness.js";
import type { TestClient } from "../helpers/client.js";
import { make, missingVmPrereqs, retry, TOP, version, Vm, type VmDisk } from "./vm.js";
import { missingRegistryTools } from "./registry.js";
import { componentRss, hostKubeconfig, kubeApi, missingKubeImages, nodeReady, notReadyDetails, podReady, podTable, withMirrors } from "./kube.js";

const ARCH = "amd64" as const;
const DIR = path.join(TOP, "build", ARCH, "vm");
const MIN = 60_000;
const BOOT_MS = 8 * MIN;
const HOSTNAME = "kube-vm";
// Opt-in: under TCG on this 2-core machine the run is longer than CI's whole budget (boot, a 155 MB installer pull
// and its verification, install, then Kubernetes: 30-60 min measured) and it has not yet reached node Ready here.
const optIn = process.env.VM_KUBERNETES === "1" ? undefined : "VM_KUBERNETES=1 not set (30-60 min under TCG; not part of CI)";
const skip = optIn ?? missingVmPrereqs(ARCH) ?? missingRegistryTools() ?? (await missingKubeImages());
if (skip) console.log(`test/vm/kubernetes: skipped: ${skip}`);

const files = {
  medium: path.join(DIR, "kube-boot.raw"),
  install: path.join(DIR, "kube-install.qcow2"),
  vars: path.join(DIR, "kube-vars.fd"),
};
const INSTALLER = "machined/installer:vm-kube";

describe.skipIf(!!skip)(`Kubernetes on the ${ARCH} image in QEMU`, () => {
  let vm: Vm | undefined;
  let cfgs: GeneratedConfigs;
  let config: string;
  let core: k8s.CoreV1Api | undefined;
  let apps: k8s.AppsV1Api | undefined;
  let failed: string | undefined;
  const t0 = Date.now();
  const figures: Record<string, number | Record<string, number>> = {};
  const mark = (what: string) => {
    figures[what] = Math.round((Date.now() - t0) / 1000);
    console.log(`[vm kubernetes +${figures[what]}s] ${what}`);
  };
  const admin = (): TestClient => vm!.mtlsClient(talosconfigCreds(cfgs.talosconfig));

  /** Runs a step unless an earlier one failed (then it is skipped, naming the first failure). */
  const step = (name: string, fn: () => Promise<void>, timeoutMs: number) =>
    it(name, async (ctx) => {
      if (failed) {
        console.log(`skipping "${name}": earlier step failed: ${failed}`);
        ctx.skip();
      }
      // set until the step ends well: a step that runs out of time (vitest abandons it) counts as failed too
      failed = name;
      try {
        await fn();
        failed = undefined;
        mark(name);
      } catch (err) {
        throw new Error(`${(err as Error).message}\n${await diagnostics()}`);
      }
    }, timeoutMs);

  /** What the node says about itself when a step fails: services, kube-system pods, the serial console's tail. */
  const diagnostics = async (): Promise<string> => {
    if (!vm) return "";
    const out: string[] = [];
    const c = vm.running ? admin() : undefined;
    const services = await c?.unary(MachineService, "ServiceList", EmptySchema, m.ServiceListResponseSchema, {}, { deadlineMs: 30_000 }).catch(() => undefined);
    for (const s of services?.messages[0].services ?? []) out.push(`service ${s.id}: ${s.state} healthy=${s.health?.healthy} ${s.health?.lastMessage ?? ""} | ${s.events?.events.slice(-2).map((e) => e.msg).join(" | ")}`);
    const pods = await core?.listNamespacedPod({ namespace: "kube-system" }).catch(() => undefined);
    if (pods) out.push(podTable(pods.items));
    out.push(`serial console (${vm.logFile}):\n${vm.tail(30)}`);
    return out.join("\n");
  };

  beforeAll(async () => {
    fs.mkdirSync(DIR, { recursive: true });
    const out = path.join(TOP, "build", ARCH);
    if (!process.env.VM_SKIP_BUILD || !fs.existsSync(path.join(out, "disk.raw"))) {
      make(["image", `ARCH=${ARCH}`, "ZSTD_LEVEL=3", "IMAGE_VERSION=vm-kube"], `${ARCH}-kube`, { SKIP_SYSROOT: fs.existsSync(path.join(out, "work/sysroot/opt/node")) ? "1" : "" });
    }
    // An image built before `make kube-images` lacks the flannel CNI plugin: no pod would ever get a network.
    const report = fs.readFileSync(path.join(out, "build-report.txt"), "utf8");
    if (!/^ {2}CNI plugins: .*\bflannel\b/m.test(report)) throw new Error(`build/${ARCH} has no flannel CNI plugin (make kube-images, then make image again):\n${report}`);
    for (const f of Object.values(files)) fs.rmSync(f, { force: true });
    execFileSync("cp", ["--sparse=always", path.join(out, "disk.raw"), files.medium]);
    execFileSync("qemu-img", ["create", "-q", "-f", "qcow2", files.install, "8G"]);
    // the installer goes to the same loopback registry as the component images (registry.local is mirrored there)
    execFileSync("skopeo", ["copy", "--quiet", "--dest-tls-verify=false", `oci-archive:${path.join(out, `installer-${ARCH}.oci.tar`)}`, `docker://127.0.0.1:5000/${INSTALLER}`], { timeout: 10 * MIN });
    cfgs = await generateConfigs({ clusterName: "vm-kube", endpoint: "https://10.0.2.15:6443", installDisk: "/dev/vda", installImage: `registry.local/${INSTALLER}`, talosVersion: "v1.13" });
    fs.writeFileSync(path.join(DIR, "talosconfig"), cfgs.talosconfig);
    config = applyPatches(withMirrors(cfgs.controlplane), [parsePatch(`machine:\n  network:\n    hostname: ${HOSTNAME}\ncluster:\n  allowSchedulingOnControlPlanes: true\n`)]);
  }, 20 * MIN);

  afterAll(() => {
    vm?.kill();
    console.log(`test/vm/kubernetes figures (s since start; RSS MiB): ${JSON.stringify(figures)}`);
    fs.mkdirSync(DIR, { recursive: true });
    fs.writeFileSync(path.join(DIR, "kubernetes-timings.json"), JSON.stringify(figures) + "\n");
  });

  const boot = async (name: string, disks: VmDisk[]) => {
    vm?.kill();
    vm = await Vm.start({ arch: ARCH, name, disks, varsFile: files.vars, memMiB: 3072, timeoutMs: 120 * MIN });
    console.log(`[vm kubernetes] ${name}: API on 127.0.0.1:${vm.port}, API server on 127.0.0.1:${vm.kubePort}, console ${vm.logFile}`);
    await vm.waitFor(/\[machined init .*\] listening on :50000/, BOOT_MS);
    expect(vm.lines.some((l) => /kubernetes node: .*overlays \/etc\/cni \/etc\/kubernetes \/usr\/libexec\/kubernetes \/opt \/etc\/cri/.test(l.text))).toBe(true);
  };

  step("boots from the medium into the maintenance API", async () => {
    await boot("kube-1-medium", [
      { file: files.install, format: "qcow2", serial: "install", bootindex: 1 },
      { file: files.medium, format: "raw", serial: "boot", bootindex: 0 },
    ]);
    await retry(() => version(vm!.insecureClient()), MIN);
  }, BOOT_MS + 2 * MIN);

  step("applies a control-plane config with the registry mirrors: installs onto /dev/vda and reboots", async () => {
    const res = await apply(vm!.insecureClient(), config);
    expect(res.messages.length).toBe(1);
    const v = vm!;
    const r = await Promise.race([v.exited, new Promise<"timeout">((res) => setTimeout(() => res("timeout"), 10 * MIN))]);
    if (r === "timeout") throw new Error("the guest did not reboot after the install within 10 min");
  }, 45 * MIN); // measured under load: the installer pull 8-13 min, its verification 6-16 min, the install 2-3

  step("boots the installed system: mTLS API with the talosconfig", async () => {
    await boot("kube-2-installed", [{ file: files.install, format: "qcow2", serial: "install", bootindex: 0 }]);
    const v = await retry(() => version(admin()), 3 * MIN, 3000);
    expect(v.messages[0].version?.tag).toMatch(/^v/);
  }, BOOT_MS + 4 * MIN);

  step("bootstraps etcd", async () => {
    await retry(() => admin().unary(MachineService, "Bootstrap", m.BootstrapRequestSchema, m.BootstrapResponseSchema, {}, { deadlineMs: 60_000 }), 10 * MIN, 5000);
  }, 11 * MIN);

  step("the node is Ready", async () => {
    const kubeconfig = await retry(() => hostKubeconfig(admin(), vm!.kubePort), 10 * MIN, 5000);
    expect(kubeconfig.server).toBe("https://10.0.2.15:6443");
    fs.writeFileSync(path.join(DIR, "kubeconfig"), kubeconfig.text);
    ({ core, apps } = kubeApi(kubeconfig.text));
    await retry(
      async () => {
        const n = await core!.readNode({ name: HOSTNAME });
        const ready = n.status?.conditions?.find((c) => c.type === "Ready");
        if (!nodeReady(n)) throw new Error(`node ${HOSTNAME}: Ready=${ready?.status} ${ready?.message ?? ""}`);
        expect(n.status?.nodeInfo?.kubeletVersion).toMatch(/^v1\.37\./);
      },
      30 * MIN,
      5000,
    );
  }, 42 * MIN);

  step("the control plane, kube-proxy, flannel and CoreDNS run in kube-system", async () => {
    const prefixes = [`kube-apiserver-${HOSTNAME}`, `kube-controller-manager-${HOSTNAME}`, `kube-scheduler-${HOSTNAME}`, "kube-proxy-", "kube-flannel-", "coredns-"];
    let last: k8s.V1Pod[] = [];
    try {
      await retry(
        async () => {
          const pods = (await core!.listNamespacedPod({ namespace: "kube-system" })).items;
          last = pods;
          for (const p of prefixes) {
            const found = pods.filter((x) => x.metadata?.name?.startsWith(p));
            if (!found.length || !found.every(podReady)) throw new Error(`${p}* not Running and ready:\n${podTable(pods)}`);
          }
          console.log(`kube-system:\n${podTable(pods)}`);
        },
        20 * MIN,
        5000,
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${await notReadyDetails(core!, last, ["kube-proxy-"])}`);
    }
    figures.rssMiB = await componentRss(admin()).catch(() => ({}));
  }, 22 * MIN);

  step("passes the server-side health check with nothing skipped", async () => {
    const lines: string[] = [];
    await admin()
      .stream(ClusterService, "HealthCheck", c.HealthCheckRequestSchema, c.HealthCheckProgressSchema, { waitTimeout: { seconds: BigInt(10 * 60), nanos: 0 } }, {
        deadlineMs: 11 * MIN,
        onMessage: (x) => lines.push(x.message),
      })
      .catch((err: Error) => {
        throw new Error(`${err.message}\n${lines.join("\n")}`);
      });
    expect(lines.join("\n")).not.toMatch(/SKIP/);
    for (const check of ["etcd to be healthy", "kubelet to be healthy", "all k8s nodes to report ready", "all control plane static pods to be running", "kube-proxy to report ready", "coredns to report ready"]) {
      expect(lines.some((l) => l.startsWith(`waiting for ${check}: OK`)), `${check} OK in\n${lines.join("\n")}`).toBe(true);
    }
  }, 12 * MIN);

  step("runs a busybox Deployment from the registry and reads its log", async () => {
    await apps!.createNamespacedDeployment({
      namespace: "default",
      body: {
        metadata: { name: "hello" },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: "hello" } },
          template: {
            metadata: { labels: { app: "hello" } },
            spec: { containers: [{ name: "hello", image: "docker.io/library/busybox:1.37", command: ["sh", "-c", "while true; do echo hello from $(hostname); sleep 2; done"] }] },
          },
        },
      },
    });
    let last: k8s.V1Pod[] = [];
    const pod = await retry(
      async () => {
        last = (await core!.listNamespacedPod({ namespace: "default", labelSelector: "app=hello" })).items;
        if (last[0]?.status?.phase !== "Running") throw new Error(`the Deployment's pod is not Running:\n${podTable(last)}`);
        return last[0].metadata!.name!;
      },
      10 * MIN,
      5000,
    ).catch(async (err: Error) => {
      throw new Error(`${err.message}\n${await notReadyDetails(core!, last, [], "default")}`);
    });
    const log = await retry(async () => {
      const text = await core!.readNamespacedPodLog({ name: pod, namespace: "default" });
      if (!text.includes(`hello from ${pod}`)) throw new Error(`log of ${pod}: ${JSON.stringify(text.slice(0, 200))}`);
      return text;
    }, 3 * MIN, 5000);
    expect(log.split("\n")[0]).toBe(`hello from ${pod}`);
  }, 14 * MIN);
});
