/**
 * siderolink.ConfigController: SiderolinkConfig `siderolink` from a SideroLinkConfig document (apiUrl with its
 * `jointoken` query, `grpc_tunnel=true`, http = insecure), as upstream; nothing without one. The SideroLink
 * tunnel itself is not implemented here: this only shows what the config asks for.
 */
import { SiderolinkConfigType, type SiderolinkConfigSpec } from "../../machinery/resources/types/node-config.js";
import type { Controller } from "../../state/runtime/index.js";
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";

export function siderolinkConfigSpec(apiUrl: string): SiderolinkConfigSpec {
  const u = new URL(apiUrl);
  const token = u.searchParams.get("jointoken") ?? "";
  const tunnel = ["true", "y"].includes(u.searchParams.get("grpc_tunnel") ?? "");
  const insecure = u.protocol === "http:";
  const port = u.port || (insecure ? "80" : "443");
  return { apiEndpoint: apiUrl, host: `${u.hostname}:${port}`, joinToken: token, insecure, tunnel };
}

export function siderolinkConfigController(): Controller {
  const ptr = { namespace: "config", type: SiderolinkConfigType.type, id: "siderolink" };
  return {
    name: "siderolink.ConfigController",
    inputs: [machineConfigInput],
    outputs: [{ type: SiderolinkConfigType.type, kind: "exclusive" }],
    reconcile(ctx) {
      const apiUrl = machineConfig(ctx)?.document("SideroLinkConfig")?.data.apiUrl;
      if (typeof apiUrl !== "string" || apiUrl === "") {
        ctx.destroy(ptr);
        return;
      }
      ctx.apply({ ...ptr, spec: siderolinkConfigSpec(apiUrl) });
    },
  };
}
