/**
 * Kubernetes resource quantities (`200m`, `512Mi`, `1.5G`, `1e3`): checked the way apimachinery's ParseQuantity
 * accepts them, and valued like Quantity.Value() (rounded up to a whole unit), which is what GOMEMLIMIT needs.
 */
const BINARY: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
const DECIMAL: Record<string, number> = { n: 1e-9, u: 1e-6, m: 1e-3, "": 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };

const FORMAT = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/;

/** The quantity's value rounded up to an integer; throws "quantities must match the regular expression ..." like upstream. */
export function quantityValue(text: string): number {
  const m = FORMAT.exec(text.trim());
  if (!m) throw new Error(`quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' (got ${JSON.stringify(text)})`);
  const n = Number(m[1]);
  const suffix = m[2] ?? "";
  let scale: number;
  if (suffix in BINARY) scale = BINARY[suffix];
  else if (suffix in DECIMAL) scale = DECIMAL[suffix];
  else scale = 10 ** Number(suffix.slice(1));
  return Math.ceil(n * scale - 1e-9);
}

/** Throws unless `text` is a quantity. */
export function checkQuantity(text: string): void {
  quantityValue(text);
}
