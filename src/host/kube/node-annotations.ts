/**
 * Writing annotations onto a Node object, for the Kubernetes discovery registry: get the Node, change only the
 * annotations asked for (an empty value removes one), and replace it guarded by its resourceVersion. The kubelet
 * updates its Node's status all the time, so a 409 Conflict is answered by reading it again and retrying a few
 * times. Upstream sends a strategic merge patch of the same change; a guarded update gives the same result
 * through the one Kubernetes client (src/host/kube/api.ts), which has an in-memory fake for tests.
 */
import { kubeApi as kubernetesClient } from "./api.js";

/**
 * What the annotator needs of a Kubernetes client: get and guarded update of one object. Kept structural so any
 * client with these methods (KubeWriter today) fits, and errors are recognized by their HTTP `status`.
 */
export interface NodeObjectClient {
  get(key: { apiVersion: string; kind: string; name: string }, signal?: AbortSignal): Promise<NodeLike | undefined>;
  update(obj: NodeLike, signal?: AbortSignal): Promise<unknown>;
  close(): Promise<void>;
}

type NodeLike = { apiVersion?: string; kind?: string; metadata?: { annotations?: Record<string, string>; [k: string]: unknown }; [k: string]: unknown };

const httpStatus = (e: unknown) => (e as { status?: unknown } | null)?.status;

export type AnnotateResult = "updated" | "unchanged" | "missing";

export interface NodeAnnotator {
  /** Sets (or, for "", removes) `annotations` on Node `name`; "missing" when there is no such Node (yet). */
  annotate(name: string, annotations: Record<string, string>, signal?: AbortSignal): Promise<AnnotateResult>;
  close(): Promise<void>;
}

export type NodeAnnotatorFactory = (kubeconfig: string) => NodeAnnotator;

const CONFLICT_RETRIES = 5;

/** Applies `want` to a Node's annotations; undefined when nothing would change. */
export function withAnnotations<T extends { metadata?: { annotations?: Record<string, string> } }>(node: T, want: Record<string, string>): T | undefined {
  const current = node.metadata?.annotations ?? {};
  const next: Record<string, string> = { ...current };
  for (const [k, v] of Object.entries(want)) {
    if (v === "") delete next[k];
    else next[k] = v;
  }
  const same = Object.keys(next).length === Object.keys(current).length && Object.entries(next).every(([k, v]) => current[k] === v);
  if (same) return undefined;
  return { ...node, metadata: { ...node.metadata, annotations: next } };
}

export function nodeAnnotatorFromClient(client: NodeObjectClient): NodeAnnotator {
  return {
    async annotate(name, annotations, signal) {
      for (let attempt = 1; ; attempt++) {
        const node = await client.get({ apiVersion: "v1", kind: "Node", name }, signal);
        if (!node) return "missing";
        const next = withAnnotations(node, annotations);
        if (!next) return "unchanged";
        try {
          await client.update(next, signal);
          return "updated";
        } catch (e) {
          if (httpStatus(e) === 404) return "missing";
          if (httpStatus(e) === 409 && attempt < CONFLICT_RETRIES) continue;
          if (httpStatus(e) === 409) {
            throw new Error(`unable to update node ${JSON.stringify(name)} due to conflict: ${(e as Error).message}`);
          }
          throw new Error(`error updating node ${JSON.stringify(name)}: ${(e as Error).message}`);
        }
      }
    },
    close: () => client.close(),
  };
}

/** The real annotator for a kubeconfig (YAML text). */
export const nodeAnnotator: NodeAnnotatorFactory = (kubeconfig) => nodeAnnotatorFromClient(kubernetesClient(kubeconfig));
