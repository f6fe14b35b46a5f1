/**
 * The cluster discovery controllers in one list for the wiring (runtime/core.ts): identity, discovery config,
 * the local affiliate, the registries (Kubernetes pull/push; the service registry's stand-in), the merge into
 * Affiliates, Members, and the `discovery` control-plane endpoints. See docs/discovery.md.
 */
import type { Files } from "../../host/files/index.js";
import type { KubeApiFactory } from "../../host/kube/api.js";
import type { NodeAnnotatorFactory } from "../../host/kube/node-annotations.js";
import type { Controller } from "../../state/runtime/index.js";
import { affiliateMergeController } from "./affiliate-merge.js";
import { discoveryConfigController } from "./discovery-config.js";
import { discoveryServiceController } from "./discovery-service.js";
import { discoveryEndpointController } from "./endpoint.js";
import { kubernetesPullController } from "./kubernetes-pull.js";
import { kubernetesPushController } from "./kubernetes-push.js";
import { localAffiliateController } from "./local-affiliate.js";
import { memberController } from "./member.js";

export interface DiscoveryControllerOptions {
  /** Folder the node paths (/etc/kubernetes) are under (default "/"). */
  root?: string;
  files?: Files;
  kubeApi?: KubeApiFactory;
  annotator?: NodeAnnotatorFactory;
  fallbackAddresses?: () => string[];
  pollMs?: number;
  waitMs?: number;
  retryMs?: number;
}

export function discoveryControllers(opts: DiscoveryControllerOptions = {}): Controller[] {
  const io = { root: opts.root, files: opts.files, pollMs: opts.pollMs, waitMs: opts.waitMs, retryMs: opts.retryMs };
  return [
    discoveryConfigController(),
    localAffiliateController({ fallbackAddresses: opts.fallbackAddresses }),
    kubernetesPullController({ ...io, kubeApi: opts.kubeApi }),
    kubernetesPushController({ ...io, annotator: opts.annotator }),
    discoveryServiceController(),
    affiliateMergeController(),
    memberController(),
    discoveryEndpointController(),
  ];
}
