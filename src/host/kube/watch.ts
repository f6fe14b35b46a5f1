/**
 * One kind watched with one client, for a controller that keeps a watch open across reconciles: the client
 * and its informer belong together and are replaced together when what they were built from (a kubeconfig,
 * a node name) changes, or after repeated failures.
 */
import type { KubeKind, KubeObject } from "../../machinery/kubernetes/objects.js";
import type { KubeApi, KubeApiFactory, ListOptions } from "./api.js";
import { startInformer, type Informer, type InformerOptions } from "./informer.js";

export interface KubeWatchOptions<T> extends InformerOptions {
  kubeconfig: string;
  factory: KubeApiFactory;
  kind: KubeKind;
  list: ListOptions;
  onChange(objects: T[]): void;
  onError?(err: Error, consecutive: number): void;
}

export class KubeWatch<T extends KubeObject> {
  private readonly api: KubeApi;
  private readonly informer: Informer<T>;
  /** Failures since the last successful list or change. */
  errors = 0;
  private closing?: Promise<void>;

  constructor(
    /** What the watch was built from; a different key means a new watch is needed. */
    readonly key: string,
    opts: KubeWatchOptions<T>,
  ) {
    this.api = opts.factory(opts.kubeconfig);
    this.informer = startInformer<T>(
      this.api,
      opts.kind,
      opts.list,
      {
        onChange: (objs) => {
          this.errors = 0;
          opts.onChange(objs);
        },
        onError: (err) => opts.onError?.(err, ++this.errors),
      },
      opts,
    );
  }

  get synced(): boolean {
    return this.informer.synced;
  }

  objects(): T[] {
    return this.informer.objects();
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      // Stopping the informer aborts the request it waits on; then the connections go.
      await this.informer.stop();
      await this.api.close();
    })();
    return this.closing;
  }
}
