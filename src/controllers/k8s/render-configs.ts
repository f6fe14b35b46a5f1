/**
 * k8s.RenderConfigsStaticPodController (control planes): writes the configuration files the control plane pods
 * read under /system/config/kubernetes/<component>/ (mode 0400, owned by the component's uid where we are root) —
 * kube-apiserver's admission-control-config.yaml, auditpolicy.yaml and authorization-config.yaml, kube-scheduler's
 * scheduler-config.yaml — and publishes ConfigStatuses `static-pods` (controlplane). Its version is, as upstream,
 * the four config resources' versions joined; kube-apiserver carries it as talos.dev/config-file-version.
 */
import { ensureDir, writeOwnedFile } from "../../host/owned-file.js";
import {
  admissionControlConfigFile,
  auditPolicyFile,
  authorizationConfigFile,
  schedulerConfigFile,
} from "../../machinery/kubernetes/config-files.js";
import { APISERVER_UID, SCHEDULER_UID } from "../../machinery/kubernetes/pod-templates.js";
import type { RenderedPod } from "../../machinery/kubernetes/render-version.js";
import { APISERVER_CONFIG, SCHEDULER_CONFIG, under } from "../../machinery/paths.js";
import { pointer, read } from "../../machinery/resources/read.js";
import {
  ADMISSION_CONTROL_ID,
  AdmissionControlConfigType,
  AUDIT_POLICY_ID,
  AuditPolicyConfigType,
  AUTHORIZATION_ID,
  AuthorizationConfigType,
  CONTROLPLANE_NS,
  ConfigStatusType,
  SCHEDULER_ID,
  SchedulerConfigType,
  STATIC_PODS_STATUS_ID,
} from "../../machinery/resources/types/k8s-controlplane.js";
import type { Controller } from "../../state/runtime/index.js";
import type { RenderOptions } from "./render-secrets.js";

export function renderConfigsController(opts: RenderOptions = {}): Controller {
  const root = opts.root ?? "/";
  const ptr = pointer(ConfigStatusType, STATIC_PODS_STATUS_ID);
  return {
    name: "k8s.RenderConfigsStaticPodController",
    inputs: [AdmissionControlConfigType, AuditPolicyConfigType, AuthorizationConfigType, SchedulerConfigType].map((t) => ({
      namespace: CONTROLPLANE_NS,
      type: t.type,
      kind: "weak" as const,
    })),
    outputs: [{ type: ConfigStatusType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      const admission = read(ctx, AdmissionControlConfigType, ADMISSION_CONTROL_ID);
      const audit = read(ctx, AuditPolicyConfigType, AUDIT_POLICY_ID);
      const authorization = read(ctx, AuthorizationConfigType, AUTHORIZATION_ID);
      const scheduler = read(ctx, SchedulerConfigType, SCHEDULER_ID);
      if (!admission || !audit || !authorization || !scheduler) return;
      const render = (file: string, pod: string, f: () => string) => {
        try {
          return f();
        } catch (err) {
          throw new Error(`error generating configuration ${JSON.stringify(file)} for ${JSON.stringify(pod)}: ${(err as Error).message}`);
        }
      };
      const pods: RenderedPod[] = [
        {
          name: "kube-apiserver",
          dir: APISERVER_CONFIG,
          uid: APISERVER_UID,
          files: {
            "admission-control-config.yaml": render("admission-control-config.yaml", "kube-apiserver", () => admissionControlConfigFile(admission.spec)),
            "auditpolicy.yaml": render("auditpolicy.yaml", "kube-apiserver", () => auditPolicyFile(audit.spec)),
            "authorization-config.yaml": render("authorization-config.yaml", "kube-apiserver", () => authorizationConfigFile(authorization.spec)),
          },
        },
        {
          name: "kube-scheduler",
          dir: SCHEDULER_CONFIG,
          uid: SCHEDULER_UID,
          files: { "scheduler-config.yaml": render("scheduler-config.yaml", "kube-scheduler", () => schedulerConfigFile(scheduler.spec)) },
        },
      ];
      for (const pod of pods) {
        const dir = under(root, pod.dir);
        try {
          await ensureDir(dir);
        } catch (err) {
          throw new Error(`error creating config directory for ${JSON.stringify(pod.name)}: ${(err as Error).message}`);
        }
        for (const [name, content] of Object.entries(pod.files)) {
          try {
            await writeOwnedFile(`${dir}/${name}`, content, 0o400, { uid: pod.uid, gid: pod.uid });
          } catch (err) {
            throw new Error(`error writing configuration ${JSON.stringify(name)} for ${JSON.stringify(pod.name)}: ${(err as Error).message}`);
          }
        }
      }
      const version = [admission, audit, authorization, scheduler].map((r) => String(r.metadata.version)).join("");
      ctx.apply({ ...ptr, spec: { ready: true, version } });
    },
  };
}
