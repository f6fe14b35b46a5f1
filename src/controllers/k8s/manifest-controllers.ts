/** The bootstrap manifest chain: config → BootstrapManifestsConfig/ExtraManifestsConfig → Manifests → the cluster. */
import type { Controller } from "../../state/runtime/index.js";
import { controlPlaneBootstrapManifestsController } from "./bootstrap-manifests-config.js";
import { controlPlaneExtraManifestsController } from "./extra-manifests-config.js";
import { extraManifestController, type ExtraManifestOptions } from "./extra-manifest.js";
import { manifestController } from "./manifest.js";
import { manifestApplyController, type ManifestApplyOptions } from "./manifest-apply.js";

export type KubernetesManifestOptions = ManifestApplyOptions & ExtraManifestOptions;

export function kubernetesManifestControllers(opts: KubernetesManifestOptions = {}): Controller[] {
  return [
    controlPlaneBootstrapManifestsController(),
    controlPlaneExtraManifestsController(),
    manifestController(),
    extraManifestController({ download: opts.download }),
    manifestApplyController({ connect: opts.connect }),
  ];
}
