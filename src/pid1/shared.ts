/** Pieces both entry wirings (local mode and PID 1) use. */
import type { AddressInfo } from "node:net";
import * as os from "node:os";
import { Writable } from "node:stream";
import type { NodeServices } from "../lifecycle/services.js";
import type { ApiDeps } from "../api/deps.js";
import { ApiServer } from "../api/server.js";
import { buildServices } from "../api/services.js";
import { IdentityManager, WORKER_WAITING_REASON } from "../api/identity.js";

/** The host's non-loopback addresses (zone ids stripped). */
export function hostAddresses(): string[] {
  return Object.values(os.networkInterfaces())
    .flat()
    .filter((a): a is os.NetworkInterfaceInfo => !!a && !a.internal)
    .map((a) => a.address.replace(/%.*$/, ""));
}

/** A stream that drops writes until its real destination is attached. */
export class LateSink extends Writable {
  private target: Writable | undefined;

  attach(target: Writable): void {
    this.target = target;
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (!this.target) return cb();
    this.target.write(chunk, cb);
  }
}

/** The hooks the controllers and the install manager need from the supervised services. */
export function serviceHooks(services: NodeServices) {
  return {
    etcdMemberId: async () => {
      const etcd = services.etcd;
      if (!etcd) throw new Error("etcd is not supervised on this node");
      return (await etcd.status()).memberId;
    },
    ctr: () => (services.supervisor.info("containerd")?.state === "Running" ? services.containerd?.ctr : undefined),
    leaveEtcd: async () => {
      if (services.supervisor.info("etcd")?.state === "Running") await services.etcd?.leaveCluster(services.supervisor);
    },
  };
}

export interface ServeApiOptions {
  deps: ApiDeps;
  hostname: () => string;
  listen: { host: string; port: number };
}

/**
 * Boots the node and serves the API on `listen`: maintenance or mTLS from the stored config, switching (and
 * rotating the server certificate) as the config changes. A worker without its API certificate says so in
 * MachineStatus (and in the errors of calls it can't serve).
 */
export async function serveApi(o: ServeApiOptions): Promise<{ api: ApiServer; identity: IdentityManager; addr: AddressInfo; mode: string }> {
  const { node, log } = o.deps;
  const api = new ApiServer(o.deps);
  api.register(buildServices(o.deps));
  const identity = new IdentityManager(
    { addresses: hostAddresses, hostname: o.hostname },
    log,
    (mode) => api.setMode(mode),
    (id) => api.rotate(id),
  );
  await node.boot();
  const initial = await identity.modeFor(node.activeConfig);
  const addr = await api.listen(o.listen.host, o.listen.port, initial);
  o.deps.services?.setApiEndpoint({ host: addr.address, port: addr.port }); // apid's health check dials it
  const reportIdentity = (kind: string) => node.setCondition("apid", kind === "waiting" ? WORKER_WAITING_REASON : undefined);
  reportIdentity(initial.kind);
  node.addListener({
    onConfigChanged: (cfg) => identity.follow(cfg).then((mode) => reportIdentity(mode.kind)),
    onReboot: () => api.conns.closeAll(),
  });
  return { api, identity, addr, mode: initial.kind };
}
