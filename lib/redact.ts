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

/**
 * `text` without the platform's internal addresses (and without `also`: e.g. the executor's id). Words in `keep` —
 * what the user sent (userAddresses) — stay as written: an error quoting the user's own URL says nothing of ours.
 */
export function redactInternal(text: string, also: string[] = [], keep: string[] = []): string {
  let out = text;
  for (const word of also) if (word) out = out.split(word).join('<executor>');
  // Kept words are set aside under markers no pattern matches (longest first: a URL before its host), then put back.
  // A kept host followed by a port is not the user's (127.0.0.1 sent, 127.0.0.1:4321 ours): it is redacted as usual.
  const kept = [...new Set(keep.filter(Boolean))].sort((a, b) => b.length - a.length);
  kept.forEach((word, i) => (out = out.replace(new RegExp(`${word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?!:\\d)`, 'g'), `\u0000${i}\u0000`)));
  for (const re of ADDRESS_PATTERNS) out = out.replace(re, INTERNAL_ADDRESS);
  return out.replace(/\u0000(\d+)\u0000/g, (_, i: string) => kept[Number(i)]!);
}

/** A JSON value with every string redacted (redactInternal). */
export function redactJson(value: unknown, also: string[] = [], keep: string[] = []): unknown {
  if (typeof value === 'string') return redactInternal(value, also, keep);
  if (Array.isArray(value)) return value.map((v) => redactJson(v, also, keep));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactJson(v, also, keep)]));
  return value;
}

/** The URLs in a request the user sent (any depth), with their hosts: what redactInternal keeps when an error quotes them. */
export function userAddresses(value: unknown): string[] {
  const found: string[] = [];
  // An explicit stack, not recursion: a request nested thousands deep must not overflow the caller's stack.
  const pending: unknown[] = [value];
  while (pending.length) {
    const v = pending.pop();
    if (typeof v === 'string') {
      if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(v)) continue;
      found.push(v.slice(0, 200)); // errors quote a URL cut to 200 characters at most
      try {
        const u = new URL(v);
        found.push(u.host, u.hostname.replace(/^\[|\]$/g, ''));
      } catch {
        /* not a URL after all: the string alone is kept */
      }
    } else if (Array.isArray(v)) for (const x of v) pending.push(x);
    else if (v && typeof v === 'object') for (const x of Object.values(v)) pending.push(x);
  }
  return found;
}

