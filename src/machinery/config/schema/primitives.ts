/**
 * Building blocks of the v1alpha1 zod schema. They mirror how go-yaml v3 decodes into Go types, because that is
 * what decides whether a real Talos node accepts a document:
 *  - a string field takes any scalar (`token: 1234` is the string "1234");
 *  - an integer field takes only numbers (a quoted "1500" is rejected), and unsigned fields reject negatives;
 *  - a bool field takes true/false and, for YAML 1.1 compatibility, yes/no/on/off;
 *  - structs reject unknown keys ("unknown keys found during decoding").
 */
import * as z from "zod";

const scalarToString = (v: unknown) => (typeof v === "number" || typeof v === "boolean" ? String(v) : v);

export const str = z.preprocess(scalarToString, z.string());

export const int = z.number().int();
export const uint = z.number().int().nonnegative();

const oldBools: Record<string, boolean> = {
  y: true, yes: true, on: true, n: false, no: false, off: false,
};

export const bool = z.preprocess((v) => {
  if (typeof v === "string") {
    const known = oldBools[v.toLowerCase()];
    // go-yaml only accepts the exact spellings y/Y/yes/Yes/YES ..., not mixed case like yEs.
    if (known !== undefined && (v === v.toLowerCase() || v === v.toUpperCase() || v === v[0].toUpperCase() + v.slice(1).toLowerCase())) {
      return known;
    }
  }
  return v;
}, z.boolean());

/** Go time.Duration: a duration string such as `1h0m0s` or `500ms`, or a number of nanoseconds. */
const goDuration = /^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$|^0$/;
export const duration = z.union([
  z.number().int(),
  z.string().regex(goDuration, { message: "invalid duration" }),
]);

const b64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** Base64 (standard alphabet, padded) as used for PEM-encoded certificates and keys. */
export const base64 = str.refine((s) => s.length % 4 === 0 && b64.test(s), { message: "invalid base64" });

export const strList = z.array(str);
export const strMap = z.record(z.string(), str);

/** meta.Args: each value is a string or a list of strings. */
export const args = z.record(z.string(), z.union([str, z.array(str)]));

/** meta.Unstructured: any YAML map, kept as is. */
export const unstructured = z.record(z.string(), z.unknown());

/** Certificate and key, both base64 of PEM (x509.PEMEncodedCertificateAndKey). */
export const certAndKey = z.strictObject({ crt: base64.optional(), key: base64.optional() });
export const certOnly = z.strictObject({ crt: base64.optional() });
export const keyOnly = z.strictObject({ key: base64.optional() });

/** Kubernetes-style resources block (requests/limits). */
export const resources = z.strictObject({ requests: unstructured.optional(), limits: unstructured.optional() });

export const volumeMount = z.strictObject({
  hostPath: str,
  mountPath: str,
  readonly: bool.optional(),
});

export const env = strMap;
