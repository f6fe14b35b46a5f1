/**
 * secrets.RootEtcdController: the etcd CA (EtcdRootSecrets `etcd`) from cluster.etcd.ca, on control planes only.
 * A control-plane config without it is an error (upstream: "missing cluster.etcdCA secret").
 */
import { isControlPlane, machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { EtcdRootType, SECRET_IDS } from "../../machinery/resources/types/secrets.js";
import { pointer } from "../../machinery/resources/read.js";
import type { Controller } from "../../state/runtime/index.js";
import { pem } from "./root-os.js";

export function rootEtcdController(): Controller {
  const ptr = pointer(EtcdRootType, SECRET_IDS.etcd);
  return {
    name: "secrets.RootEtcdController",
    inputs: [machineConfigInput],
    outputs: [{ type: EtcdRootType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const cfg = machineConfig(ctx);
      if (!cfg?.machine || !cfg.cluster || !isControlPlane(cfg.machineType())) {
        ctx.destroy(ptr);
        return;
      }
      const ca = cfg.cluster.etcd?.ca;
      if (!ca?.crt || !ca.key) throw new Error("missing cluster.etcdCA secret");
      ctx.apply({ ...ptr, spec: { etcdCA: { crt: pem(ca.crt, "cluster.etcd.ca.crt"), key: pem(ca.key, "cluster.etcd.ca.key") } } });
    },
  };
}
