/**
 * A component's error catalogue, declared once: each entry's key names the error in code
 * (`EricErrorCode.URL_INVALID`), its stable code is what travels in `{error: {code}}`, its status is the HTTP status
 * the error is answered with. One table, so a code cannot lack a status.
 */
type Entries = Record<string, readonly [code: string, status: number]>;

export interface ErrorCatalogue<T extends Entries> {
  /** Key → stable code (the catalogue's `XErrorCode` object). */
  readonly codes: { readonly [K in keyof T]: T[K][0] };
  /** The HTTP status of one of the catalogue's codes. */
  status(code: T[keyof T][0]): number;
  /** The HTTP status of any code: undefined when it is not the catalogue's (an error rebuilt from the wire). */
  status(code: string): number | undefined;
}

export function errorCatalogue<const T extends Entries>(entries: T): ErrorCatalogue<T> {
  const codes = Object.fromEntries(Object.entries(entries).map(([key, [code]]) => [key, code])) as ErrorCatalogue<T>['codes'];
  const statuses = new Map<string, number>(Object.values(entries));
  return { codes, status: ((code: string) => statuses.get(code)) as ErrorCatalogue<T>['status'] };
}
