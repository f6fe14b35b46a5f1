/**
 * The etcd PEM set (server, peer, agent client) issued from the config's etcd CA. Issued whenever the CA
 * or the node's names change; the etcd service reads the latest set before every start.
 */
import type { MachineConfig } from "../../machinery/config/index.js";
import { decodeBase64Pair, issueEtcdClientCert, issueEtcdPeerCert, issueEtcdServerCert, tlsKeyPem } from "../../machinery/pki/index.js";
import type { EtcdPki } from "../../supervisor/index.js";

/** The etcd CA pair from `cluster.etcd.ca`, or undefined when the config has none. */
export function etcdCAOf(cfg: MachineConfig | undefined): { crt: string; key: string } | undefined {
  const ca = cfg?.cluster?.etcd?.ca;
  return ca?.crt && ca.key ? { crt: ca.crt, key: ca.key } : undefined;
}

export async function issueEtcdPki(caB64: { crt: string; key: string }, hostname: string, addresses: string[]): Promise<EtcdPki> {
  const ca = decodeBase64Pair(caB64, "cluster.etcd.ca");
  // Local mode advertises loopback, so the peer certificate must cover it too.
  const ips = [...new Set(["127.0.0.1", ...addresses])];
  const names = { hostname, addresses: ips, dnsNames: [hostname] };
  const [server, peer, client] = await Promise.all([
    issueEtcdServerCert(ca, names),
    issueEtcdPeerCert(ca, names),
    // CN "talos": the agent's own etcd client, as upstream names it.
    issueEtcdClientCert(ca, "talos"),
  ]);
  return {
    ca: ca.crt,
    serverCert: server.crt,
    serverKey: tlsKeyPem(server.key),
    peerCert: peer.crt,
    peerKey: tlsKeyPem(peer.key),
    clientCert: client.crt,
    clientKey: tlsKeyPem(client.key),
  };
}
