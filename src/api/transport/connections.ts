/**
 * Accepted TLS connections keyed by peer address, so a call can learn how its connection was authenticated
 * (grpc-js exposes only the peer string to interceptors and handlers), and what the connection holds.
 */
import type { TLSSocket } from "node:tls";
import { isAllowed } from "../../machinery/role.js";

export interface ConnectionInit {
  socket: TLSSocket;
  /** "<address>:<port>", captured when the connection was accepted. */
  peer: string;
  maintenance: boolean;
  /** Accepted while the node waits for its server certificate (worker without trustd). */
  waiting?: boolean;
  roles: ReadonlySet<string>;
}

export interface ConnectionInfo extends ConnectionInit {
  /** Request bytes reserved by this connection's calls (messages announced but not yet handed over). */
  inflightBytes: number;
  /** Whether the connection's roles allow a method, decided once per method. */
  allows(method: string): boolean;
}

export class ConnectionRegistry {
  private byPeer = new Map<string, ConnectionInfo>();

  add(init: ConnectionInit): ConnectionInfo {
    const decided = new Map<string, boolean>();
    const info: ConnectionInfo = {
      ...init,
      inflightBytes: 0,
      allows(method) {
        let ok = decided.get(method);
        if (ok === undefined) decided.set(method, (ok = isAllowed(method, init.roles)));
        return ok;
      },
    };
    this.byPeer.set(init.peer, info);
    init.socket.once("close", () => {
      if (this.byPeer.get(init.peer) === info) this.byPeer.delete(init.peer);
    });
    return info;
  }

  lookup(peer: string): ConnectionInfo | undefined {
    return this.byPeer.get(peer);
  }

  /** Close every serving connection (a simulated reboot drops them all). */
  closeAll(): void {
    for (const c of this.byPeer.values()) c.socket.destroy();
  }

  get size(): number {
    return this.byPeer.size;
  }
}
