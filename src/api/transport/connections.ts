/**
 * Accepted TLS connections keyed by peer address, so a call can learn how its connection was authenticated
 * (grpc-js exposes only the peer string and the verified certificate to handlers).
 */
import type { TLSSocket } from "node:tls";

export interface ConnectionInfo {
  socket: TLSSocket;
  maintenance: boolean;
  /** Accepted while the node waits for its server certificate (worker without trustd). */
  waiting?: boolean;
  roles: ReadonlySet<string>;
}

export class ConnectionRegistry {
  private byPeer = new Map<string, ConnectionInfo>();

  add(info: ConnectionInfo): void {
    const key = peerKey(info.socket);
    this.byPeer.set(key, info);
    info.socket.once("close", () => {
      if (this.byPeer.get(key) === info) this.byPeer.delete(key);
    });
  }

  lookup(peer: string): ConnectionInfo | undefined {
    return this.byPeer.get(peer);
  }

  /** Close every connection accepted in maintenance mode (after the node leaves it). */
  closeMaintenance(graceMs: number): void {
    for (const c of this.byPeer.values()) {
      if (c.maintenance) setTimeout(() => c.socket.destroy(), graceMs).unref();
    }
  }

  closeAll(): void {
    for (const c of this.byPeer.values()) c.socket.destroy();
  }

  get size(): number {
    return this.byPeer.size;
  }
}

/** Same format as grpc-js getPeer(): "<remoteAddress>:<remotePort>". */
export function peerKey(s: { remoteAddress?: string; remotePort?: number }): string {
  return `${s.remoteAddress}:${s.remotePort}`;
}
