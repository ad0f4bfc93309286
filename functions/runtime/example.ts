/**
 * A sample request for an app, derived from its request schema (zod -> JSON Schema): required fields (or all),
 * a field's first declared example (`.meta({ examples: [...] })`), else its default, strings "hello", numbers
 * their minimum (or 1), the first enum value. `cornserve up` prints it in the
 * curl and CLI examples; undefined when the schema has no JSON Schema form.
 */
import { z } from 'zod';

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  examples?: unknown[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  minimum?: number;
  exclusiveMinimum?: number;
};

function sample(s: JsonSchema, depth: number, all: boolean): unknown {
  if (depth > 8) return null;
  if (s.const !== undefined) return s.const;
  if (s.examples?.length) return s.examples[0];
  if (s.default !== undefined) return s.default;
  if (s.enum?.length) return s.enum[0];
  const alt = s.anyOf?.[0] ?? s.oneOf?.[0];
  if (alt) return sample(alt, depth + 1, all);
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case 'object':
      return Object.fromEntries((all ? Object.keys(s.properties ?? {}) : (s.required ?? [])).map((k) => [k, sample(s.properties?.[k] ?? {}, depth + 1, all)]));
    case 'array':
      return s.items ? [sample(s.items, depth + 1, all)] : [];
    case 'string':
      return 'hello';
    case 'integer':
    case 'number':
      return s.minimum ?? (s.exclusiveMinimum !== undefined ? Math.floor(s.exclusiveMinimum) + 1 : 1);
    case 'boolean':
      return true;
    default:
      return null;
  }
}

/** `all`: optional fields too (a second example, e.g. echo's streaming request). */
export function requestExample(schema: z.ZodType, all = false): unknown {
  try {
    return sample(z.toJSONSchema(schema, { io: 'input' }) as JsonSchema, 0, all);
  } catch {
    return undefined;
  }
}

/** `text: string, chunks?: integer` — the top-level fields of an object schema, for help text. */
export function requestFields(schema: z.ZodType): string | undefined {
  try {
    const s = z.toJSONSchema(schema, { io: 'input' }) as JsonSchema;
    if (!s.properties) return undefined;
    const required = new Set(s.required ?? []);
    return Object.entries(s.properties)
      .map(([k, v]) => `${k}${required.has(k) ? '' : '?'}: ${[v.type ?? (v.anyOf ? 'union' : 'any')].flat().join('|')}`)
      .join(', ');
  } catch {
    return undefined;
  }
}
