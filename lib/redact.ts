/**
 * Internal addresses never leave the platform: error texts that reach a client go through redactInternal, which
 * replaces loopback and unix-socket URLs, loopback host:port pairs and socket / temp-folder paths (and any extra
 * words, e.g. an executor id) with placeholders. The full text stays in logs and trace spans.
 */
const INTERNAL_ADDRESS = '<internal address>';
/**
 * Addresses inside the platform, as they appear in error texts: http(s)/ws/tcp/http+unix URLs on loopback or
 * unix sockets, bare loopback host:port pairs, and socket or temp-folder paths.
 */
const ADDRESS_PATTERNS: RegExp[] = [
  /\b[a-z][a-z0-9+.-]*\+unix:\/\/[^\s"'),]*/gi,
  /\bunix:\/?[^\s"'),]+/gi,
  /\b(?:https?|wss?|tcp|ipc):\/\/(?:localhost|127(?:\.\d{1,3}){3}|0\.0\.0\.0|\[::1?\])(?::\d+)?[^\s"'),]*/gi,
  /\b(?:localhost|127(?:\.\d{1,3}){3}|0\.0\.0\.0)(?::\d+)?\b/gi,
  /\[?::1\]?:\d+/g,
  /(?:\/[\w.+-]+)*\/[\w.+-]+\.sock\b/g,
  /\/(?:tmp|var\/run|run|dev\/shm)\/[^\s"'),]*/g,
];

/** `text` without the platform's internal addresses (and without `also`: e.g. the executor's id). */
export function redactInternal(text: string, also: string[] = []): string {
  let out = text;
  for (const word of also) if (word) out = out.split(word).join('<executor>');
  for (const re of ADDRESS_PATTERNS) out = out.replace(re, INTERNAL_ADDRESS);
  return out;
}

/** A JSON value with every string redacted (redactInternal). */
export function redactJson(value: unknown, also: string[] = []): unknown {
  if (typeof value === 'string') return redactInternal(value, also);
  if (Array.isArray(value)) return value.map((v) => redactJson(v, also));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactJson(v, also)]));
  return value;
}

