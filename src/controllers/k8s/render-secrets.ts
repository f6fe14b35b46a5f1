/**
 * k8s.RenderSecretsStaticPodController (control planes): writes the certificates, keys and kubeconfigs each
 * control plane pod mounts under /system/secrets/kubernetes/<component>/ (mode 0400, owned by the component's uid
 * where we are root), and publishes SecretStatuses `static-pods` (controlplane) whose version the pods carry as
 * talos.dev/secrets-version:
 *  - kube-apiserver: etcd-client-ca.crt and etcd-client.{crt,key} (the etcd CA and the kube-apiserver etcd client
 *    certificate), ca.crt (every accepted Kubernetes CA), apiserver.{crt,key}, apiserver-kubelet-client.{crt,key},
 *    service-account.{pub,key}, aggregator-ca.crt, front-proxy-client.{crt,key}, encryptionconfig.yaml;
 *  - kube-controller-manager: ca.{crt,key} (the cluster CA, which it signs kubelet certificates with),
 *    service-account.key, kubeconfig;
 *  - kube-scheduler: kubeconfig.
 * Upstream stamps the KubernetesSecrets version; here the version counts changes of the rendered files, so a pod is
 * restarted whenever anything it mounts changed (an etcd client or serving certificate included).
 */
import { ensureDir, writeOwnedFile } from "../../host/owned-file.js";
import { encryptionConfigFile } from "../../machinery/kubernetes/config-files.js";
import { APISERVER_UID, CONTROLLER_MANAGER_UID, SCHEDULER_UID } from "../../machinery/kubernetes/pod-templates.js";
import { APISERVER_SECRETS, CONTROLLER_MANAGER_SECRETS, SCHEDULER_SECRETS, under } from "../../machinery/paths.js";
import { publicKeyPem } from "../../machinery/pki/public-key.js";
import { digest } from "../../machinery/resources/issued.js";
import { pointer, read, readSpec } from "../../machinery/resources/read.js";
import { SecretsStatusType, STATIC_PODS_STATUS_ID } from "../../machinery/resources/types/k8s-controlplane.js";
import {
  EtcdCertsType,
  EtcdRootType,
  KubernetesCertsType,
  KubernetesDynamicCertsType,
  KubernetesRootType,
  SECRET_IDS,
} from "../../machinery/resources/types/secrets.js";
import type { Controller } from "../../state/runtime/index.js";
import { nextRenderVersion, RENDERED_ANNOTATION, type RenderedPod } from "../../machinery/kubernetes/render-version.js";

export interface RenderOptions {
  /** Root of the node's filesystem view (tests: a temporary folder). Default "/". */
  root?: string;
}

export function renderSecretsController(opts: RenderOptions = {}): Controller {
  const root = opts.root ?? "/";
  const ptr = pointer(SecretsStatusType, STATIC_PODS_STATUS_ID);
  return {
    name: "k8s.RenderSecretsStaticPodController",
    inputs: [
      { ...pointer(KubernetesRootType, SECRET_IDS.k8s), kind: "weak" },
      { ...pointer(EtcdRootType, SECRET_IDS.etcd), kind: "weak" },
      { ...pointer(KubernetesCertsType, SECRET_IDS.k8sCerts), kind: "weak" },
      { ...pointer(KubernetesDynamicCertsType, SECRET_IDS.k8sDynamicCerts), kind: "weak" },
      { ...pointer(EtcdCertsType, SECRET_IDS.etcd), kind: "weak" },
    ],
    outputs: [{ type: SecretsStatusType.type, kind: "exclusive" }],
    async reconcile(ctx) {
      const k8sCerts = readSpec(ctx, KubernetesCertsType, SECRET_IDS.k8sCerts);
      const dynamic = readSpec(ctx, KubernetesDynamicCertsType, SECRET_IDS.k8sDynamicCerts);
      const etcd = readSpec(ctx, EtcdCertsType, SECRET_IDS.etcd);
      const etcdRoot = readSpec(ctx, EtcdRootType, SECRET_IDS.etcd);
      const k8sRoot = readSpec(ctx, KubernetesRootType, SECRET_IDS.k8s);
      // Like upstream: nothing to do (and the last status kept) until every input exists.
      if (!k8sCerts || !dynamic || !etcd || !etcdRoot || !k8sRoot) return;
      if (!k8sRoot.serviceAccount?.key) throw new Error("error parsing service account key: cluster.serviceAccount.key is missing");
      if (!k8sRoot.issuingCA) throw new Error("error writing certificate \"ca.key\" for \"kube-controller-manager\": cluster.ca has no key on this node");
      let saPublic: string;
      try {
        saPublic = publicKeyPem(k8sRoot.serviceAccount.key);
      } catch (err) {
        throw new Error(`error parsing service account key: ${(err as Error).message}`);
      }
      const pods: RenderedPod[] = [
        {
          name: "kube-apiserver",
          dir: APISERVER_SECRETS,
          uid: APISERVER_UID,
          files: {
            "etcd-client-ca.crt": etcdRoot.etcdCA.crt,
            "etcd-client.crt": etcd.etcdAPIServer.crt,
            "etcd-client.key": etcd.etcdAPIServer.key,
            "ca.crt": k8sRoot.acceptedCAs.map((c) => c.crt).join(""),
            "apiserver.crt": dynamic.apiServer.crt,
            "apiserver.key": dynamic.apiServer.key,
            "apiserver-kubelet-client.crt": dynamic.apiServerKubeletClient.crt,
            "apiserver-kubelet-client.key": dynamic.apiServerKubeletClient.key,
            "service-account.pub": saPublic,
            "service-account.key": k8sRoot.serviceAccount.key,
            "aggregator-ca.crt": k8sRoot.aggregatorCA?.crt ?? "",
            "front-proxy-client.crt": dynamic.frontProxy.crt,
            "front-proxy-client.key": dynamic.frontProxy.key,
            "encryptionconfig.yaml": encryptionConfigFile(k8sRoot),
          },
        },
        {
          name: "kube-controller-manager",
          dir: CONTROLLER_MANAGER_SECRETS,
          uid: CONTROLLER_MANAGER_UID,
          files: {
            "ca.crt": k8sRoot.issuingCA.crt,
            "ca.key": k8sRoot.issuingCA.key,
            "service-account.key": k8sRoot.serviceAccount.key,
            kubeconfig: k8sCerts.controllerManagerKubeconfig,
          },
        },
        { name: "kube-scheduler", dir: SCHEDULER_SECRETS, uid: SCHEDULER_UID, files: { kubeconfig: k8sCerts.schedulerKubeconfig } },
      ];
      for (const pod of pods) {
        const dir = under(root, pod.dir);
        try {
          await ensureDir(dir);
        } catch (err) {
          throw new Error(`error creating secrets directory for ${JSON.stringify(pod.name)}: ${(err as Error).message}`);
        }
        for (const [name, content] of Object.entries(pod.files)) {
          try {
            await writeOwnedFile(`${dir}/${name}`, content, 0o400, { uid: pod.uid, gid: pod.uid });
          } catch (err) {
            throw new Error(`error writing ${JSON.stringify(name)} for ${JSON.stringify(pod.name)}: ${(err as Error).message}`);
          }
        }
      }
      const rendered = digest(pods);
      const existing = read(ctx, SecretsStatusType, STATIC_PODS_STATUS_ID);
      ctx.apply({ ...ptr, spec: { ready: true, version: nextRenderVersion(existing, rendered) }, annotations: { [RENDERED_ANNOTATION]: rendered } });
    },
  };
}
