/**
 * What the static pod server answers the kubelet (its `staticPodURL`): every static pod as one YAML `PodList`,
 * the shape upstream's StaticPodServerController marshals (keys sorted; `items: null` when there are none).
 */
import type { PodManifest } from "../resources/types/k8s.js";
import { kubernetesYaml } from "./config-files.js";

export function staticPodListYaml(pods: PodManifest[]): string {
  return kubernetesYaml({ apiVersion: "v1", items: pods.length > 0 ? pods : null, kind: "PodList" });
}
