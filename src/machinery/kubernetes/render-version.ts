/**
 * The version a render status (SecretStatuses / ConfigStatuses `static-pods`) carries into the pod annotations:
 * a counter that moves only when the rendered files changed, so the kubelet restarts a pod exactly when something
 * it mounts is different. The digest of what was rendered rides along as an annotation of the status.
 */
import type { Resource } from "../resources/resource.js";
import type { RenderStatusSpec } from "../resources/types/k8s-controlplane.js";

export const RENDERED_ANNOTATION = "machined.dev/rendered";

/** The files one component mounts: folder (a node path), owner uid (= gid), and name → content. */
export interface RenderedPod {
  name: string;
  dir: string;
  uid: number;
  files: Record<string, string>;
}

export function nextRenderVersion(existing: Resource<RenderStatusSpec> | undefined, rendered: string): string {
  if (!existing) return "1";
  if (existing.metadata.annotations[RENDERED_ANNOTATION] === rendered) return existing.spec.version;
  return String((Number.parseInt(existing.spec.version, 10) || 0) + 1);
}
