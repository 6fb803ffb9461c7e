/**
 * Request validation with TypeBox's compiler instead of Fastify's default Ajv setup: bodies are
 * checked strictly (no type coercion, unknown properties rejected rather than silently dropped) and
 * every bad field is reported, not just the first. Query strings and path parameters arrive as text:
 * a value becomes an integer only when written as a canonical decimal ("25", never "25.0", "+25",
 * "0x19", "2.5e1" or " 25"), so a request can never act on a resource other than the one it named,
 * and any text in them that PostgreSQL cannot store is refused naming the parameter. Bodies get the
 * same text checks in the JSON parser (json-body.ts). The checks themselves live in src/input.ts and
 * src/contract/, shared with the TypeScript client.
 */
import type { FastifySchemaCompiler } from 'fastify';
import { OptionalKind, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { compileChecker } from '../contract/check.ts';
import { parseCanonicalInteger, textProblem } from '../input.ts';
import { ValidationFailure, type FieldError } from './errors.ts';

const PART_NAMES: Record<string, string> = {
  body: 'body',
  querystring: 'query',
  params: 'params',
  headers: 'headers',
};

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
  const checker = compileChecker(schema);
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
    const fields = checker.problems(value, part);
    return fields.length === 0 ? { value } : { error: new ValidationFailure(fields) };
  };
};
