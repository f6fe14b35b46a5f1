import { describe, expect, it } from "vitest";
import { kubeletClientCertProblem } from "../../../src/machinery/kubernetes/kubelet-client-cert.js";
import { newECDSACA } from "../../../src/machinery/pki/ca.js";
import { issueClientCert } from "../../../src/machinery/pki/issue.js";

const ca = await newECDSACA("kubernetes");
const other = await newECDSACA("kubernetes");
const node = await issueClientCert(ca, { roles: ["system:nodes"], commonName: "system:node:w1" });
// What the kubelet writes: certificate and key in one file.
const current = `${node.crt}\n${node.key}`;

describe("kubeletClientCertProblem", () => {
  it("accepts the node's own certificate from an accepted CA (any of several)", () => {
    expect(kubeletClientCertProblem(current, "w1", ca.crt)).toBeUndefined();
    expect(kubeletClientCertProblem(current, "w1", `${other.crt}\n${ca.crt}`)).toBeUndefined();
    // A node name the user manages: only the CA is checked.
    expect(kubeletClientCertProblem(current, "", ca.crt)).toBeUndefined();
  });

  it("refuses another node's certificate, naming both", () => {
    expect(kubeletClientCertProblem(current, "w2", ca.crt)).toBe('it is issued for "system:node:w1", the node is "system:node:w2"');
  });

  it("refuses a certificate of a CA the cluster does not accept, or an expired one", () => {
    expect(kubeletClientCertProblem(current, "w1", other.crt)).toMatch(/^it does not match any accepted CA: certificate was not issued by this CA/);
    expect(kubeletClientCertProblem(current, "", other.crt)).toMatch(/does not match any accepted CA/);
    const later = new Date(Date.now() + 2 * 365 * 24 * 3_600_000);
    expect(kubeletClientCertProblem(current, "w1", ca.crt, later)).toMatch(/certificate has expired/);
  });

  it("refuses a file without a usable certificate", () => {
    expect(kubeletClientCertProblem(node.key, "w1", ca.crt)).toBe("no certificate in the file");
    expect(kubeletClientCertProblem("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "w1", ca.crt)).toMatch(/^the certificate cannot be parsed/);
    expect(kubeletClientCertProblem(current, "w1", "")).toBe("there is no accepted CA to check it against");
  });
});
