/** Random 128-bit hex ids (DataForward ids must be hex: the sidecar derives tags from them). */
export function randomHex(): string {
  return globalThis.crypto.randomUUID().replaceAll('-', '');
}

/** JSON with object keys sorted, so equal values give equal strings (task equivalence keys). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => {
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      return Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    }
    return v;
  });
}

/** A deep copy through JSON: what the wire would carry (class instances become their toJSON()). */
export function toJsonValue<T = unknown>(value: unknown): T {
  return value === undefined ? (undefined as T) : (JSON.parse(JSON.stringify(value)) as T);
}
