/**
 * Request validation with TypeBox's compiler instead of Fastify's default Ajv setup: bodies are
 * checked strictly (no type coercion, unknown properties rejected rather than silently dropped) and
 * every bad field is reported, not just the first. Query strings and path parameters arrive as text,
 * so they are converted to the schema's types first ("25" → 25).
 */
import type { FastifySchemaCompiler } from 'fastify';
import { FormatRegistry, type TSchema } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { Value } from '@sinclair/typebox/value';
import { ValidationFailure, type FieldError } from './errors.ts';

FormatRegistry.Set(
  'date-time',
  (v) =>
    /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/.test(v) && !Number.isNaN(Date.parse(v)),
);
FormatRegistry.Set('uri', (v) => {
  if (!URL.canParse(v)) return false;
  const { protocol } = new URL(v);
  return protocol === 'http:' || protocol === 'https:';
});
FormatRegistry.Set('uuid', (v) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v));

const PART_NAMES: Record<string, string> = {
  body: 'body',
  querystring: 'query',
  params: 'params',
  headers: 'headers',
};

// The first error per path is the useful one; TypeBox adds follow-on errors for unions.
const MAX_FIELDS = 20;

export const validatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const checker = TypeCompiler.Compile(schema);
  const part = PART_NAMES[httpPart ?? 'body'] ?? String(httpPart);
  const convert = httpPart !== 'body';
  return (data: unknown) => {
    const value = convert ? Value.Convert(schema, Value.Default(schema, Value.Clone(data))) : data;
    if (checker.Check(value)) return { value };
    const fields: FieldError[] = [];
    const seen = new Set<string>();
    for (const e of checker.Errors(value)) {
      const field = `${part}${e.path.replaceAll('/', '.')}`;
      if (seen.has(field)) continue;
      seen.add(field);
      fields.push({ field, reason: e.message });
      if (fields.length >= MAX_FIELDS) break;
    }
    return { error: new ValidationFailure(fields) };
  };
};
