/**
 * Request validation with TypeBox's compiler instead of Fastify's default Ajv setup: bodies are
 * checked strictly (no type coercion, unknown properties rejected rather than silently dropped) and
 * every bad field is reported, not just the first. Query strings and path parameters arrive as text:
 * a value becomes an integer only when written as a canonical decimal ("25", never "25.0", "+25",
 * "0x19", "2.5e1" or " 25"), so a request can never act on a resource other than the one it named,
 * and any text in them that PostgreSQL cannot store is refused naming the parameter. Bodies get the
 * same text checks in the JSON parser (json-body.ts). The checks themselves live in src/input.ts,
 * shared with the TypeScript clients.
 */
import type { FastifySchemaCompiler } from 'fastify';
import { FormatRegistry, Kind, OptionalKind, type TSchema } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { DefaultErrorFunction, SetErrorFunction, ValueErrorType } from '@sinclair/typebox/errors';
import { Value } from '@sinclair/typebox/value';
import { dateTimeProblem, parseCanonicalInteger, textProblem } from '../input.ts';
import { ValidationFailure, type FieldError } from './errors.ts';

FormatRegistry.Set('date-time', (v) => dateTimeProblem(v) === undefined);
FormatRegistry.Set('uri', (v) => {
  if (!URL.canParse(v)) return false;
  const { protocol } = new URL(v);
  return protocol === 'http:' || protocol === 'https:';
});
FormatRegistry.Set('uuid', (v) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v));

SetErrorFunction((e) => {
  if (
    e.errorType === ValueErrorType.StringFormat &&
    e.schema.format === 'date-time' &&
    typeof e.value === 'string'
  )
    return dateTimeProblem(e.value) ?? DefaultErrorFunction(e);
  if (e.errorType === ValueErrorType.Integer && typeof e.value === 'string')
    return `must be an integer in canonical decimal (digits, an optional leading -, no leading zeros), got ${JSON.stringify(e.value.slice(0, 40))}`;
  return DefaultErrorFunction(e);
});

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

/** The JSON types a property schema admits (its own, or its union branches'). */
function typesOf(schema: TSchema): unknown[] {
  const branches = (schema.anyOf as TSchema[] | undefined) ?? [schema];
  return branches.map((b): unknown => b.type);
}

/** Query or path text → the schema's scalar types, strictly; anything else stays text and fails the check. */
function fromText(schema: TSchema, data: unknown): unknown {
  const properties = schema.properties as Record<string, TSchema> | undefined;
  if (typeof data !== 'object' || data === null || properties === undefined) return data;
  const out: Record<string, unknown> = {};
  for (const [key, raw] of Object.entries(data)) {
    const prop = properties[key];
    out[key] = raw;
    if (typeof raw !== 'string' || prop === undefined) continue;
    const types = typesOf(prop);
    const n = types.includes('integer') ? parseCanonicalInteger(raw) : undefined;
    if (n !== undefined) out[key] = n;
    else if (types.includes('boolean') && (raw === 'true' || raw === 'false')) out[key] = raw === 'true';
  }
  return out;
}

/** Text PostgreSQL cannot store, in any query or path value (repeated query keys give arrays). */
function textFieldErrors(data: unknown, part: string): FieldError[] {
  if (typeof data !== 'object' || data === null) return [];
  const fields: FieldError[] = [];
  for (const [key, raw] of Object.entries(data)) {
    for (const v of Array.isArray(raw) ? (raw as unknown[]) : [raw]) {
      const reason = typeof v === 'string' ? textProblem(v) : undefined;
      if (reason !== undefined) {
        fields.push({ field: `${part}.${key}`, reason });
        break;
      }
    }
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
    if (convert) {
      const textErrors = textFieldErrors(data, part);
      if (textErrors.length > 0) return { error: new ValidationFailure(textErrors) };
    }
    const value = convert ? fromText(schema, Value.Default(schema, Value.Clone(data))) : data;
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
