/**
 * One place that prepares @peculiar/x509: it needs the reflect polyfill before import (tsyringe) and a WebCrypto
 * provider; Node's webcrypto does Ed25519 and ECDSA P-256, which is all Talos PKI uses besides RSA.
 */
import "reflect-metadata";
import { webcrypto } from "node:crypto";
import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

export { x509 };
export const subtle = webcrypto.subtle as unknown as SubtleCrypto;
