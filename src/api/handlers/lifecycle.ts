/**
 * machine.LifecycleService: Install and Upgrade stream `progress.message` lines and end with
 * `progress.exit_code` (0 success, 1 failure). Preconditions are gRPC errors with upstream's texts; a failed
 * installer run is an exit code, never a failed stream (talosctl reads the code).
 */
import type { LifecycleServiceInstallRequest, LifecycleServiceUpgradeRequest } from "../../machinery/api/gen/machine/lifecycle_pb.js";
import type { Handlers } from "../transport/service.js";
import type { CallContext } from "../transport/context.js";
import type { ApiDeps } from "../deps.js";
import { containerdNamespace, installManager } from "./images.js";

type Send = (msg: { progress: { response: { case: "message"; value: string } | { case: "exitCode"; value: number } } }) => Promise<void>;

/** Messages are sent in order; the exit code goes after every message has been written. */
function progress(send: Send) {
  let chain = Promise.resolve();
  return {
    say: (m: string) => {
      chain = chain.then(() => send({ progress: { response: { case: "message", value: m } } })).catch(() => undefined);
    },
    done: async (code: number) => {
      await chain;
      await send({ progress: { response: { case: "exitCode", value: code } } });
    },
  };
}

export function lifecycleHandlers(deps: ApiDeps): Handlers {
  return {
    Install: async (req: LifecycleServiceInstallRequest, send: Send, _ctx: CallContext) => {
      const ns = containerdNamespace(req.containerd);
      const p = progress(send);
      const code = await installManager(deps).install(req.source?.imageName ?? "", req.destination?.disk ?? "", ns, p.say);
      await p.done(code);
    },
    Upgrade: async (req: LifecycleServiceUpgradeRequest, send: Send, _ctx: CallContext) => {
      const ns = containerdNamespace(req.containerd);
      const p = progress(send);
      const code = await installManager(deps).upgradeNow(req.source?.imageName ?? "", ns, p.say);
      await p.done(code);
    },
  };
}
