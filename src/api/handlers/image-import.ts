/**
 * machine.ImageService/Import (`talosctl image import`): a client stream whose first message names the containerd
 * instance and whose other messages carry the archive, imported into that namespace's image store and unpacked
 * (supervisor/ctr-import.ts). Replies with the first imported image's name; upstream's checks and texts.
 */
import type { ImageServiceImportRequest } from "../../machinery/api/gen/machine/image_pb.js";
import { ApiError, Code, invalidArgument } from "../../machinery/errors.js";
import { importImages } from "../../host/ctr-import.js";
import type { Handlers } from "../transport/service.js";
import type { CallContext } from "../transport/context.js";
import type { ApiDeps } from "../deps.js";
import { containerdStore, imageManager } from "./images.js";

export function imageImportHandlers(deps: ApiDeps): Handlers {
  return {
    Import: async (reqs: AsyncIterable<ImageServiceImportRequest>, _ctx: CallContext) => {
      const it = reqs[Symbol.asyncIterator]();
      const first = await it.next();
      if (first.done || first.value.request.case !== "containerd") throw invalidArgument("containerd instance is required");
      const store = containerdStore(first.value.request.value);
      const ns = store.namespace;
      const ctr = imageManager(deps).containerd(store);
      let bad: ApiError | undefined;
      const chunks = async function* () {
        for (let r = await it.next(); !r.done; r = await it.next()) {
          if (r.value.request.case !== "imageChunk") {
            bad = invalidArgument("no image chunk");
            return;
          }
          yield r.value.request.value.bytes;
        }
      };
      let names: string[];
      try {
        // No abort signal here: a client stream's context ends when the client half-closes, which is exactly when
        // ctr still has to finish. A client that goes away mid-stream ends the archive early, and ctr fails on it.
        names = await importImages(ctr, ns, chunks());
      } catch (err) {
        throw bad ?? new ApiError(Code.Internal, `failed to import image: ${(err as Error).message}`);
      }
      if (bad) throw bad;
      if (names.length === 0) throw invalidArgument("no images imported from archive");
      return { name: names[0] };
    },
  };
}
