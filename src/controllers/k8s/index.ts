/**
 * The Kubernetes control plane controllers in one list for the wiring (`...kubernetesControlPlaneControllers(o)`):
 * the Kubernetes secrets (roots, CertSANs, certificates, kubeconfigs, kubelet secrets), the component configs of
 * namespace `controlplane`, the renderers of the files the static pods mount, the static pods themselves, and the
 * static pod server the kubelet reads them from. Types to register: K8S_CONTROLPLANE_TYPES
 * (machinery/resources/types/k8s-controlplane.ts).
 */
import type { LoopbackHttp } from "../../host/loopback-http.js";
import type { Controller } from "../../state/runtime/index.js";
import { kubeletSecretsController } from "../secrets/kubelet.js";
import { kubernetesCertSANsController } from "../secrets/kubernetes-cert-sans.js";
import { kubernetesCertsController } from "../secrets/kubernetes-certs.js";
import { kubernetesDynamicCertsController } from "../secrets/kubernetes-dynamic-certs.js";
import { rootKubernetesController } from "../secrets/root-kubernetes.js";
import { controlPlaneAdmissionControlController } from "./control-plane-admission-control.js";
import { controlPlaneAPIServerController } from "./control-plane-apiserver.js";
import { controlPlaneAuditPolicyController } from "./control-plane-audit-policy.js";
import { controlPlaneAuthorizationController } from "./control-plane-authorization.js";
import { controlPlaneControllerManagerController } from "./control-plane-controller-manager.js";
import { controlPlaneSchedulerController } from "./control-plane-scheduler.js";
import { renderConfigsController } from "./render-configs.js";
import { renderSecretsController } from "./render-secrets.js";
import { staticPodServerController } from "./static-pod-server.js";
import { controlPlaneStaticPodController } from "./static-pods.js";

export interface KubernetesControlPlaneOptions {
  /** Root of the node's filesystem view the secrets and configs are written under. Default "/". */
  root?: string;
  /** How the static pod server listens (tests: a fake). Default: HTTP on 127.0.0.1. */
  http?: LoopbackHttp;
  /** Lifetime of the Kubernetes certificates and kubeconfigs (renewed at half of it). Default one year. */
  certValidityMs?: number;
}

export function kubernetesControlPlaneControllers(opts: KubernetesControlPlaneOptions = {}): Controller[] {
  const certs = { validityMs: opts.certValidityMs };
  return [
    rootKubernetesController(),
    kubeletSecretsController(),
    kubernetesCertSANsController(),
    kubernetesDynamicCertsController(certs),
    kubernetesCertsController(certs),
    controlPlaneAPIServerController(),
    controlPlaneControllerManagerController(),
    controlPlaneSchedulerController(),
    controlPlaneAdmissionControlController(),
    controlPlaneAuditPolicyController(),
    controlPlaneAuthorizationController(),
    renderSecretsController({ root: opts.root }),
    renderConfigsController({ root: opts.root }),
    controlPlaneStaticPodController(),
    staticPodServerController({ http: opts.http }),
  ];
}
