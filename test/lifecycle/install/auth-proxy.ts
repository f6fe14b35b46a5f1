/**
 * A registry that wants credentials, for the pull tests: a loopback HTTP proxy in front of the real
 * docker-registry that answers 401 until the request carries them. "basic": the 401 asks for Basic auth.
 * "bearer": the 401 points at a token endpoint (this proxy's /token), which needs Basic credentials and hands
 * out a token that later requests must carry, the way Docker Hub and Harbor work.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface AuthProxy {
  host: string;
  /** Requests that reached the registry with valid credentials. */
  authorized: number;
  close(): Promise<void>;
}

export async function authProxy(upstream: string, scheme: "basic" | "bearer", user: string, password: string): Promise<AuthProxy> {
  const basic = `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
  const token = "tok-" + Math.random().toString(36).slice(2);
  const state = { authorized: 0 };
  const server = http.createServer((req, res) => {
    const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    if (scheme === "bearer" && req.url?.startsWith("/token")) {
      if (req.headers.authorization !== basic) return void res.writeHead(401).end("bad credentials");
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ token }));
      return;
    }
    const want = scheme === "basic" ? basic : `Bearer ${token}`;
    if (req.headers.authorization !== want) {
      const challenge = scheme === "basic" ? 'Basic realm="test"' : `Bearer realm="http://${host}/token",service="test"`;
      res.writeHead(401, { "www-authenticate": challenge }).end("auth required");
      return;
    }
    state.authorized++;
    const up = http.request(`http://${upstream}${req.url}`, { method: req.method, headers: { ...req.headers, host: upstream, authorization: "" } }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on("error", () => res.writeHead(502).end());
    req.pipe(up);
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  return {
    host: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    get authorized() {
      return state.authorized;
    },
    close: () => new Promise<void>((ok) => server.close(() => ok())),
  };
}
