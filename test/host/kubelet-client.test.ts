/**
 * The kubelet /pods/ client against a real TLS server on loopback that, like the kubelet, serves a certificate
 * for the node name and requires a client certificate from the cluster CA. Certificates come from machinery/pki.
 */
import https from "node:https";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fetchKubeletPods } from "../../src/host/kube/kubelet.js";
import { ExtKeyUsage, issueLeaf, newECDSACA, type CertAndKey } from "../../src/machinery/pki/index.js";

let clusterCA: CertAndKey;
let servingCA: CertAndKey;
let client: CertAndKey;
let server: https.Server;
let port = 0;
let lastClientCN = "";

beforeAll(async () => {
  clusterCA = await newECDSACA("kubernetes");
  servingCA = await newECDSACA("kubernetes");
  const serving = await issueLeaf(servingCA, { subject: { commonName: "node-1" }, extKeyUsage: [ExtKeyUsage.ServerAuth], dnsSANs: ["node-1"], validityMs: 3_600_000 });
  client = await issueLeaf(clusterCA, { subject: { commonName: "apiserver-kubelet-client", organizations: ["system:masters"] }, extKeyUsage: [ExtKeyUsage.ClientAuth], validityMs: 3_600_000 });
  server = https.createServer({ cert: serving.crt, key: serving.key, ca: clusterCA.crt, requestCert: true, rejectUnauthorized: true }, (req, res) => {
    lastClientCN = String((req.socket as import("node:tls").TLSSocket).getPeerCertificate().subject?.CN ?? "");
    if (req.url !== "/pods/") {
      res.writeHead(404).end("not found");
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(
      JSON.stringify({
        kind: "PodList",
        items: [{ metadata: { name: "kube-apiserver-node-1", namespace: "kube-system", annotations: { "kubernetes.io/config.source": "http" } }, status: { phase: "Running" } }],
      }),
    );
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
});

describe("fetchKubeletPods", () => {
  it("reads the pod list with the client certificate, trusting the serving certificate for the node name", async () => {
    const pods = await fetchKubeletPods({ port, cert: client.crt, key: client.key, ca: `${clusterCA.crt}\n${servingCA.crt}`, servername: "node-1" });
    expect(pods).toEqual([
      { metadata: { name: "kube-apiserver-node-1", namespace: "kube-system", annotations: { "kubernetes.io/config.source": "http" } }, status: { phase: "Running" } },
    ]);
    expect(lastClientCN).toBe("apiserver-kubelet-client");
  });

  it("fails naming the problem: untrusted certificate, wrong name, nothing listening", async () => {
    await expect(fetchKubeletPods({ port, cert: client.crt, key: client.key, ca: clusterCA.crt, servername: "node-1" })).rejects.toThrow(
      `Get "https://127.0.0.1:${port}/pods/":`,
    );
    await expect(fetchKubeletPods({ port, cert: client.crt, key: client.key, ca: servingCA.crt, servername: "node-2" })).rejects.toThrow(/node-2/);
    const closed = https.createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", () => r()));
    const free = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    await expect(fetchKubeletPods({ port: free, cert: client.crt, key: client.key, ca: servingCA.crt, servername: "node-1" })).rejects.toThrow(
      `Get "https://127.0.0.1:${free}/pods/": dial tcp 127.0.0.1:${free}: connect: connection refused`,
    );
  });
});
