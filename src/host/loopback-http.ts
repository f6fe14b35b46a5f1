/**
 * "Serve HTTP on loopback": a plain HTTP server on 127.0.0.1 at a port the kernel picks, answering every request
 * with what a handler returns. The static pod server gives the kubelet its pod list this way; nothing else on the
 * machine can reach it. The fake serves no socket: it hands the handler to the test.
 */
import * as http from "node:http";
import type { AddressInfo } from "node:net";

export interface HttpReply {
  status: number;
  body: string;
  contentType?: string;
}

export type HttpHandler = (req: { method: string; path: string }) => HttpReply;

export interface LoopbackServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  close(): Promise<void>;
}

export interface LoopbackHttp {
  /** `onError` hears about the server failing after it started (it then serves nothing more). */
  serve(handler: HttpHandler, onError: (err: Error) => void): Promise<LoopbackServer>;
}

export const loopbackHttp: LoopbackHttp = {
  serve(handler, onError) {
    const server = http.createServer((req, res) => {
      let reply: HttpReply;
      try {
        reply = handler({ method: req.method ?? "GET", path: req.url ?? "/" });
      } catch (err) {
        reply = { status: 500, body: `${(err as Error).message}\n` };
      }
      res.writeHead(reply.status, { "content-type": reply.contentType ?? "text/plain; charset=utf-8" });
      res.end(reply.body);
    });
    // A kubelet polling every 20 s keeps its connection; closing must not wait for it.
    server.keepAliveTimeout = 5_000;
    return new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen({ host: "127.0.0.1", port: 0 }, () => {
        server.off("error", reject);
        server.on("error", onError);
        const { port } = server.address() as AddressInfo;
        resolve({
          url: `http://127.0.0.1:${port}`,
          close: () =>
            new Promise<void>((done) => {
              server.close(() => done());
              server.closeAllConnections();
            }),
        });
      });
    });
  },
};

/** A LoopbackHttp without sockets: `request()` calls the handler the controller installed. */
export function fakeLoopbackHttp(): LoopbackHttp & { request(path?: string): HttpReply; closed: boolean } {
  let current: HttpHandler | undefined;
  const fake = {
    closed: false,
    async serve(handler: HttpHandler): Promise<LoopbackServer> {
      current = handler;
      return {
        url: "http://127.0.0.1:1",
        close: async () => {
          fake.closed = true;
          current = undefined;
        },
      };
    },
    request(path = "/"): HttpReply {
      if (!current) throw new Error("nothing is being served");
      return current({ method: "GET", path });
    },
  };
  return fake;
}
