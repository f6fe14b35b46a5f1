/** Talos PKI: PEM handling, CAs, leaf issuing, verification, server-cert renewal and the secrets bundle. */
export * from "./pem.js";
export * from "./ca.js";
export * from "./issue.js";
export * from "./maintenance.js";
export * from "./verify.js";
export * from "./load.js";
export * from "./renew.js";
export * from "./secrets.js";
export { formatMultiError, type RawBundle } from "./secrets-load.js";
export { ExtKeyUsage, KeyUsage, parseCertificate, type Subject } from "./certificate.js";
export { newPrivateKey } from "./keys.js";
