/**
 * The floor `npm run bench` measures machined against: a bare @grpc/grpc-js server (the library machined
 * is built on) with the same Ed25519 CA, server certificate and client-certificate requirement, answering
 * the same Version request with the same response content (decoded once, re-encoded per call with the
 * same generated protobuf-es schema), and streaming captured COSI List/Watch replies byte for byte (the
 * cost of the wire alone: no store, no encoding).
 *
 * Bundled by scripts/bench.ts and run with plain node: `node bench-floor.mjs <setup.json>`. Prints
 * `floor listening <port>` once bound; reads `bump` lines on stdin (send the captured Watch event to
 * every open Watch stream, then print `bumped`).
 */
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import * as grpc from "@grpc/grpc-js";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { VersionResponseSchema } from "../src/machinery/api/gen/machine/machine_pb.js";

interface FloorSetup {
  host: string;
  port: number;
  caPem: string;
  certPem: string;
  keyPem: string;
  /** A VersionResponse as machined sends it (base64). */
  version: string;
  /** Captured ListResponse messages (base64), served for every List call. */
  list?: string[];
  /** One captured WatchResponse event (base64), sent to every open Watch stream on `bump`. */
  watchEvent?: string;
}

const setup = JSON.parse(readFileSync(process.argv[2], "utf8")) as FloorSetup;
const versionMsg = fromBinary(VersionResponseSchema, Buffer.from(setup.version, "base64"));
const listReplies = (setup.list ?? []).map((b) => Buffer.from(b, "base64"));
const watchEvent = Buffer.from(setup.watchEvent ?? "", "base64");
const emptyWatchReply = Buffer.alloc(0);
const watchers = new Set<grpc.ServerWritableStream<Buffer, Buffer>>();

const raw = (b: Buffer) => b;
const definition: grpc.ServiceDefinition = {
  Version: {
    path: "/machine.MachineService/Version",
    requestStream: false,
    responseStream: false,
    requestSerialize: raw,
    requestDeserialize: raw,
    responseSerialize: (m: typeof versionMsg) => Buffer.from(toBinary(VersionResponseSchema, m)),
    responseDeserialize: raw,
  },
  List: {
    path: "/cosi.resource.State/List",
    requestStream: false,
    responseStream: true,
    requestSerialize: raw,
    requestDeserialize: raw,
    responseSerialize: raw,
    responseDeserialize: raw,
  },
  Watch: {
    path: "/cosi.resource.State/Watch",
    requestStream: false,
    responseStream: true,
    requestSerialize: raw,
    requestDeserialize: raw,
    responseSerialize: raw,
    responseDeserialize: raw,
  },
};

const server = new grpc.Server();
server.addService(definition, {
  Version: (_call: grpc.ServerUnaryCall<Buffer, unknown>, cb: grpc.sendUnaryData<unknown>) => cb(null, versionMsg),
  List: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
    for (const r of listReplies) call.write(r);
    call.end();
  },
  Watch: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
    call.write(emptyWatchReply);
    watchers.add(call);
    call.on("cancelled", () => watchers.delete(call));
    call.on("close", () => watchers.delete(call));
  },
});

const creds = grpc.ServerCredentials.createSsl(
  Buffer.from(setup.caPem),
  [{ cert_chain: Buffer.from(setup.certPem), private_key: Buffer.from(setup.keyPem) }],
  true,
);
server.bindAsync(`${setup.host}:${setup.port}`, creds, (err, port) => {
  if (err) {
    console.error(`floor: ${err.message}`);
    process.exit(1);
  }
  console.log(`floor listening ${port}`);
});

createInterface({ input: process.stdin }).on("line", (line) => {
  if (line.trim() !== "bump") return;
  for (const w of watchers) w.write(watchEvent);
  console.log("bumped");
});
