/** What the API edge needs from the layers below. Built by pid1/cli wiring; handlers take only this. */
import type { Logger } from "pino";
import type { Node } from "../lifecycle/node.js";
import type { SystemServices } from "../lifecycle/services.js";
import type { InstallManager } from "../lifecycle/install/manager.js";
import type { ImageManager } from "../lifecycle/images/manager.js";
import type { State } from "../state/types.js";
import type { ControllerRuntime } from "../state/runtime/index.js";
import type { TypeRegistry } from "../machinery/resources/registry.js";
import type { Files } from "../host/files/index.js";
import type { CriClientFactory } from "../host/cri/client.js";

export interface ApiDeps {
  node: Node;
  state: State;
  types: TypeRegistry;
  /** The controller runtime (for `inspect dependencies`); absent in narrow tests. */
  runtime?: ControllerRuntime;
  log: Logger;
  platform: { name: string; mode: string };
  /** Names and addresses that refer to this node (for `node`/`nodes` routing). */
  localNames(): string[];
  /** The supervisor and service logs; absent where nothing is supervised (ServiceList is then empty). */
  services?: SystemServices;
  /** Install/upgrade/rollback/reset/META on the system disk (src/lifecycle/install); absent → Unimplemented. */
  install?: InstallManager;
  /** ImageService (pull/list/remove); needs containerd, not an install target. Falls back to install.images. */
  images?: ImageManager;
  /** The filesystem the file RPCs read (List, Read, Copy, DiskUsage); the host's own when absent. */
  files?: Files;
  /** The CRI containerd's runtime API (`containers -k`, `logs -k`); absent where none runs (plain local mode). */
  cri?: CriClientFactory;
}
