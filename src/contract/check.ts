/**
 * Compiled TypeBox checkers that report every bad field with the same path and message whichever
 * entry point runs them: the API prefixes `body.`, the client reports the path inside its argument.
 * The formats (`date-time`, `uri`, `uuid`) and the messages for them are registered here, once.
 */
import { FormatRegistry, Kind, type Static, type TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { DefaultErrorFunction, SetErrorFunction, ValueErrorType } from '@sinclair/typebox/errors';
import { dateTimeProblem, type InputProblem } from '../input.ts';

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
  if (e.errorType === ValueErrorType.Union) return unionProblem(e.schema, e.value) ?? DefaultErrorFunction(e);
  return DefaultErrorFunction(e);
});

/** A scalar alternative in words: `an integer from 1 to 2147483647`, `null`, `"dead"`. */
function alternative(schema: TSchema): string | undefined {
  if (schema[Kind] === 'Null') return 'null';
  if (schema[Kind] === 'Literal') return JSON.stringify(schema.const);
  if (schema[Kind] === 'Integer') {
    const { minimum, maximum } = schema as { minimum?: number; maximum?: number };
    if (minimum !== undefined && maximum !== undefined) return `an integer from ${minimum} to ${maximum}`;
    if (minimum !== undefined) return `an integer of at least ${minimum}`;
    return 'an integer';
  }
  if (schema[Kind] === 'String') return 'a string';
  if (schema[Kind] === 'Boolean') return 'true or false';
  return undefined;
}

/**
 * "Expected union value" says neither what was wrong nor what would do: a union of scalars (a
 * nullable limit, a state name) is described by its alternatives instead.
 */
function unionProblem(schema: TSchema, value: unknown): string | undefined {
  const alternatives = ((schema.anyOf as TSchema[] | undefined) ?? []).map(alternative);
  if (alternatives.length === 0 || alternatives.some((a) => a === undefined)) return undefined;
  const got = JSON.stringify(value)?.slice(0, 40) ?? String(value);
  return `must be ${alternatives.join(' or ')}, got ${got}`;
}

// The first error per path is the useful one; TypeBox adds follow-on errors for unions.
const MAX_FIELDS = 20;

/** `path` (a JSON pointer such as `/target/queue`) under `at`: `body.target.queue`, or `target.queue` at the top. */
export function fieldAt(at: string, path: string): string {
  const dotted = path.replaceAll('/', '.');
  if (at === '') return dotted === '' ? 'input' : dotted.slice(1);
  return `${at}${dotted}`;
}

function fieldErrors(checker: TypeCheck<TSchema>, value: unknown, at: string): InputProblem[] {
  const fields: InputProblem[] = [];
  const seen = new Set<string>();
  for (const e of checker.Errors(value)) {
    const field = fieldAt(at, e.path);
    if (seen.has(field)) continue;
    seen.add(field);
    fields.push({ field, reason: e.message });
    if (fields.length >= MAX_FIELDS) break;
  }
  return fields;
}

export interface Checker<T extends TSchema> {
  readonly schema: T;
  check(value: unknown): value is Static<T>;
  /** Every bad field of `value` (empty when it passes), each named under `at`. */
  problems(value: unknown, at: string): InputProblem[];
}

export function compileChecker<T extends TSchema>(schema: T): Checker<T> {
  const checker = TypeCompiler.Compile(schema);
  // For a union ("one job or many"), "Expected union value" names nothing; report instead the
  // errors of the alternative the value came closest to matching.
  const branches =
    schema[Kind] === 'Union' ? (schema.anyOf as TSchema[]).map((b) => TypeCompiler.Compile(b)) : [];
  // Closest: fewest mismatches in the top-level shape (unexpected or missing properties), then fewest errors.
  const depth1 = (at: string, f: InputProblem[]): number => {
    const top = at === '' ? 1 : at.split('.').length + 1;
    return f.filter((e) => e.field.split('.').length <= top).length;
  };
  return {
    schema,
    check: (value: unknown): value is Static<T> => checker.Check(value),
    problems(value, at) {
      if (checker.Check(value)) return [];
      let fields: InputProblem[] | undefined;
      for (const branch of branches) {
        const candidate = fieldErrors(branch, value, at);
        const better =
          fields === undefined ||
          depth1(at, candidate) < depth1(at, fields) ||
          (depth1(at, candidate) === depth1(at, fields) && candidate.length < fields.length);
        if (better) fields = candidate;
      }
      if (fields === undefined || fields.length === 0) fields = fieldErrors(checker, value, at);
      return fields;
    },
  };
}
