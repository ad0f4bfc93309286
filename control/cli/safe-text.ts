/**
 * JSON text made safe for a terminal: the characters a terminal may act on (C0 and C1 controls, DEL, line and
 * paragraph separators) and U+FFFD (the mark of bytes that were not UTF-8, as the random-weight test models produce)
 * are written as \uXXXX escapes. In JSON text those characters occur only inside strings, where the escape means the
 * same character: the output parses to the same value (`| jq` still works). Formatting newlines are kept.
 */
const UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\ufffd]/g;

export function terminalSafeJson(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
