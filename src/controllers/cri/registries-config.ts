/**
 * cri.RegistriesConfigController: machine.registries (and the Registry* documents) as containerd's hosts folder,
 * one `<registry>/hosts.toml` per mirrored registry under /etc/cri/conf.d/hosts — what the CRI containerd reads for
 * pod images and machined reads for the etcd and kubelet images. containerd reads the folder on each pull, so a
 * change needs no restart.
 */
import { hostsDirFiles, registriesOf } from "../../machinery/config/registries.js";
import { CRI_REGISTRY_HOSTS, under } from "../../machinery/paths.js";
import { machineConfig, machineConfigInput } from "../../machinery/resources/types/config.js";
import { digest } from "../../machinery/resources/issued.js";
import { dirname } from "node:path";
import { hostFiles, type Files } from "../../host/files/index.js";
import type { Controller } from "../../state/runtime/index.js";

export function criRegistriesConfigController(o: { root?: string; files?: Files } = {}): Controller {
  const dir = under(o.root ?? "/", CRI_REGISTRY_HOSTS);
  let written: string | undefined;
  return {
    name: "cri.RegistriesConfigController",
    inputs: [machineConfigInput],
    outputs: [],
    async reconcile(ctx) {
      const registries = registriesOf(machineConfig(ctx));
      const key = digest(registries);
      if (key === written) return;
      const files = o.files ?? hostFiles;
      await files.rm(dir, { recursive: true, force: true });
      for (const f of hostsDirFiles(dir, registries)) {
        await files.mkdir(dirname(f.path), { recursive: true });
        await files.writeFile(f.path, f.content);
      }
      written = key;
    },
  };
}
