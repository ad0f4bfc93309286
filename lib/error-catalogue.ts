/**
 * A component's error catalogue: its section of the one code table (lib/error-codes.ts). Each code's key in
 * `codes` is the code without the component's prefix (`EricErrorCode.URL_INVALID` is 'ERIC_URL_INVALID'), and
 * its status is the table's, so a code cannot lack a status and no component keeps a table of its own.
 */
import { CornserveError } from '../functions/sdk/errors.js';
import { ERROR_CODES, type ErrorCodePrefix, type ErrorCodeTable } from './error-codes.js';

/** The codes of one prefix: short name → full code. */
export type SectionCodes<P extends ErrorCodePrefix> = {
  readonly [K in keyof ErrorCodeTable as K extends `${P}_${infer Short}` ? Short : never]: K;
};
/** The codes of one prefix, as a union. */
type SectionCode<P extends ErrorCodePrefix> = Extract<keyof ErrorCodeTable, `${P}_${string}`>;
/** The union of a catalogue's codes (`type EricErrorCode = CodeOf<typeof EricErrorCode>`). */
export type CodeOf<C> = C[keyof C];

/** A catalogue's error class: `new XError(code, message, details?)` answers with the code's status. */
export type CatalogueErrorClass<C extends string> = new (code: C, message: string, details?: unknown) => CornserveError;

/** A factory of a catalogue's errors: `ericError(code, message, details?)`. */
export type CatalogueErrorFactory<C extends string> = (code: C, message: string, details?: unknown) => CornserveError;

export interface ErrorCatalogue<P extends ErrorCodePrefix> {
  readonly codes: SectionCodes<P>;
  /** The HTTP status of one of the catalogue's codes. */
  status(code: SectionCode<P>): number;
  /** The HTTP status of any code: undefined when it is not the catalogue's (an error rebuilt from the wire). */
  status(code: string): number | undefined;
  /** The catalogue's CornserveError class, named `name` (an error's `name` is its class's). */
  errorClass(name: string): CatalogueErrorClass<SectionCode<P>>;
}

/**
 * A component whose errors need no class of their own: its codes, its error class named `className`, and a
 * factory, in one call (`export const { codes: EricErrorCode, errorClass: EricError, error: ericError } = ...`).
 */
export function componentErrors<P extends ErrorCodePrefix>(prefix: P, className: string) {
  const catalogue = errorCatalogue(prefix);
  const errorClass = catalogue.errorClass(className);
  const error: CatalogueErrorFactory<SectionCode<P>> = (code, message, details) => new errorClass(code, message, details);
  return { codes: catalogue.codes, errorClass, error };
}

export function errorCatalogue<P extends ErrorCodePrefix>(prefix: P): ErrorCatalogue<P> {
  const section = Object.entries(ERROR_CODES).filter(([code]) => code.startsWith(`${prefix}_`));
  const codes = Object.fromEntries(section.map(([code]) => [code.slice(prefix.length + 1), code])) as unknown as SectionCodes<P>;
  const statuses = new Map<string, number>(section);
  const status = ((code: string) => statuses.get(code)) as ErrorCatalogue<P>['status'];
  const errorClass = (name: string): CatalogueErrorClass<SectionCode<P>> => {
    const cls = class extends CornserveError {
      constructor(code: SectionCode<P>, message: string, details?: unknown) {
        super(code, message, status(code), details);
      }
    };
    Object.defineProperty(cls, 'name', { value: name });
    return cls;
  };
  return { codes, status, errorClass };
}
