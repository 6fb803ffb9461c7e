/**
 * Request validation with TypeBox's compiler instead of Fastify's default Ajv setup: bodies are
 * checked strictly (no type coercion, unknown properties rejected rather than silently dropped) and
 * every bad field is reported, not just the first. Query strings and path parameters arrive as text,
 * so they are converted to the schema's types first ("25" → 25).
 */
import type { FastifySchemaCompiler } from 'fastify';
import { FormatRegistry, Kind, OptionalKind, type TSchema } from '@sinclair/typebox';
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

function fieldErrors(
  checker: ReturnType<typeof TypeCompiler.Compile>,
  value: unknown,
  part: string,
): FieldError[] {
  const fields: FieldError[] = [];
  const seen = new Set<string>();
  for (const e of checker.Errors(value)) {
    const field = `${part}${e.path.replaceAll('/', '.')}`;
    if (seen.has(field)) continue;
    seen.add(field);
    fields.push({ field, reason: e.message });
    if (fields.length >= MAX_FIELDS) break;
  }
  return fields;
}

export const validatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const checker = TypeCompiler.Compile(schema);
  // For a union ("one job or many"), "Expected union value" names nothing; report instead the
  // errors of the alternative the value came closest to matching.
  const branches =
    schema[Kind] === 'Union' ? (schema.anyOf as TSchema[]).map((b) => TypeCompiler.Compile(b)) : [];
  const part = PART_NAMES[httpPart ?? 'body'] ?? String(httpPart);
  const convert = httpPart !== 'body';
  // A route whose body is optional (e.g. retry's options) accepts a request with no body at all.
  const optional = schema[OptionalKind] === 'Optional';
  return (data: unknown) => {
    if ((data === undefined || data === null) && optional) return { value: undefined };
    const value = convert ? Value.Convert(schema, Value.Default(schema, Value.Clone(data))) : data;
    if (checker.Check(value)) return { value };
    // Closest: fewest mismatches in the top-level shape (unexpected or missing properties), then fewest errors.
    const depth1 = (f: FieldError[]): number => f.filter((e) => e.field.split('.').length <= 2).length;
    let fields: FieldError[] | undefined;
    for (const branch of branches) {
      const candidate = fieldErrors(branch, value, part);
      const better =
        fields === undefined ||
        depth1(candidate) < depth1(fields) ||
        (depth1(candidate) === depth1(fields) && candidate.length < fields.length);
      if (better) fields = candidate;
    }
    if (fields === undefined || fields.length === 0) fields = fieldErrors(checker, value, part);
    return { error: new ValidationFailure(fields) };
  };
};
