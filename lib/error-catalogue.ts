/**
 * A component's error catalogue, declared once: each entry's key names the error in code
 * (`EricErrorCode.URL_INVALID`), its stable code is what travels in `{error: {code}}`, its status is the HTTP status
 * the error is answered with. One table, so a code cannot lack a status.
 */
import { CornserveError } from '../functions/sdk/errors.js';

type Entries = Record<string, readonly [code: string, status: number]>;

/** A catalogue's error class: `new XError(code, message, details?)` answers with the code's status. */
export type CatalogueErrorClass<C extends string> = new (code: C, message: string, details?: unknown) => CornserveError;

export interface ErrorCatalogue<T extends Entries> {
  /** Key → stable code (the catalogue's `XErrorCode` object). */
  readonly codes: { readonly [K in keyof T]: T[K][0] };
  /** The HTTP status of one of the catalogue's codes. */
  status(code: T[keyof T][0]): number;
  /** The HTTP status of any code: undefined when it is not the catalogue's (an error rebuilt from the wire). */
  status(code: string): number | undefined;
  /** The catalogue's CornserveError class, named `name` (an error's `name` is its class's). */
  errorClass(name: string): CatalogueErrorClass<T[keyof T][0]>;
}

export function errorCatalogue<const T extends Entries>(entries: T): ErrorCatalogue<T> {
  const codes = Object.fromEntries(Object.entries(entries).map(([key, [code]]) => [key, code])) as ErrorCatalogue<T>['codes'];
  const statuses = new Map<string, number>(Object.values(entries));
  const status = ((code: string) => statuses.get(code)) as ErrorCatalogue<T>['status'];
  const errorClass = (name: string): CatalogueErrorClass<T[keyof T][0]> => {
    const cls = class extends CornserveError {
      constructor(code: T[keyof T][0], message: string, details?: unknown) {
        super(code, message, status(code), details);
      }
    };
    Object.defineProperty(cls, 'name', { value: name });
    return cls;
  };
  return { codes, status, errorClass };
}
