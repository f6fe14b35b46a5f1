#!/usr/bin/env node
// TCP/unix-socket forwarder for `make cluster` (image/cluster.mjs). A unix socket is a file, so it is reachable from
// every network namespace: one forwarder in the host's namespace and one inside the cluster's namespace, joined by
// sockets under the run folder, connect the host's loopback to the VMs (their API on 50000, the API server on 6443)
// and the VMs to the host's loopback registry, without an interface, route or address added to the host's network.
//   node image/forward.mjs 'tcp:10.5.0.1:5000=>unix:/run/x/registry.sock' 'unix:/run/x/n1-50000.sock=>tcp:10.5.0.11:50000' ...
import fs from "node:fs";
import net from "node:net";

/** `tcp:HOST:PORT` or `unix:PATH` → net options. */
export function endpoint(text) {
  if (text.startsWith("unix:")) return { path: text.slice(5) };
  const m = /^tcp:(.+):(\d+)$/.exec(text);
  if (!m) throw new Error(`forward: ${JSON.stringify(text)} is neither tcp:HOST:PORT nor unix:PATH`);
  return { host: m[1], port: Number(m[2]) };
}

/** Listens on `from` and pipes every connection to `to`; resolves with the server once it listens. */
export function forward(from, to, log = () => {}) {
  const listen = endpoint(from);
  const target = endpoint(to);
  if (listen.path) fs.rmSync(listen.path, { force: true });
  const server = net.createServer((client) => {
    const upstream = net.connect(target);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end);
    upstream.on("error", end);
    client.on("close", end);
    upstream.on("close", end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  return new Promise((resolve, reject) => {
    server.once("error", (err) => reject(new Error(`forward: cannot listen on ${from}: ${err.message}`)));
    server.listen(listen.path ? { path: listen.path } : { host: listen.host, port: listen.port }, () => {
      log(`forward ${from} => ${to}`);
      resolve(server);
    });
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const pairs = process.argv.slice(2).map((a) => a.split("=>"));
  if (!pairs.length || pairs.some((p) => p.length !== 2)) {
    console.error("usage: forward.mjs 'FROM=>TO' ... (FROM/TO: tcp:HOST:PORT or unix:PATH)");
    process.exit(2);
  }
  // a target that is not up yet is one failed connection, never the forwarder's end
  Promise.all(pairs.map(([a, b]) => forward(a, b))).then(
    () => console.error(`forward: ${pairs.length} forwards up`),
    (err) => {
      console.error(err.message);
      process.exit(1);
    },
  );
  for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => process.exit(0));
}
