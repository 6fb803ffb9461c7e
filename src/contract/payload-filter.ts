/**
 * The payload search of the job lists (`GET /v1/jobs?payload=…`, the bulk actions' filter,
 * `client.jobs.search`, the dashboard's jobs page): what an operator types, turned into a JSON
 * document the payload must contain (PostgreSQL's `@>`).
 *
 *   {"customer": 42}                  a JSON object: jobs whose payload contains it
 *   customer=42                       the same, written as key=value
 *   customer=42 region=eu             several pairs: all of them
 *   order.id=A-17                     dotted keys nest: {"order": {"id": "A-17"}}
 *   customer="42" note="two words"    a value is JSON when it parses as JSON (42, true, null,
 *                                     "quoted"), else the text as typed (eu, A-17)
 *
 * Containment is JSON's own: 42 does not match "42", and an array matches the arrays that hold
 * each of its elements (`{"tags": ["urgent"]}`).
 */
import { Type } from '@sinclair/typebox';
import { jsonProblems } from '../input.ts';

export const PAYLOAD_FILTER_MAX = 2000;

export const PayloadFilterText = Type.String({
  minLength: 1,
  maxLength: PAYLOAD_FILTER_MAX,
  description:
    'jobs whose payload contains this: a JSON object (`{"customer": 42}`) or key=value pairs (`customer=42 region=eu`; dotted keys nest; a value is JSON when it parses, else text)',
});

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type PayloadFilter = Record<string, Json>;

const HOW = 'write key=value pairs (customer=42 region=eu) or a JSON object ({"customer": 42})';

/** Splits on spaces outside double quotes; a backslash inside quotes escapes the next character. */
function words(text: string): string[] | string {
  const out: string[] = [];
  let word = '';
  let quoted = false;
  let started = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] ?? '';
    if (quoted) {
      word += c;
      if (c === '\\') word += text[++i] ?? '';
      else if (c === '"') quoted = false;
    } else if (/\s/.test(c)) {
      if (started) out.push(word);
      word = '';
      started = false;
    } else {
      word += c;
      started = true;
      if (c === '"') quoted = true;
    }
  }
  if (quoted) return 'has a quote (") that is never closed';
  if (started) out.push(word);
  return out;
}

function valueOf(text: string): Json {
  try {
    return JSON.parse(text) as Json;
  } catch {
    return text;
  }
}

function pairsFilter(text: string): PayloadFilter | string {
  const list = words(text);
  if (typeof list === 'string') return list;
  if (list.length === 0) return `is empty: ${HOW}`;
  const root: PayloadFilter = {};
  for (const word of list) {
    const eq = word.indexOf('=');
    if (eq <= 0) return `${JSON.stringify(word)} is not key=value: ${HOW}`;
    const keys = word.slice(0, eq).split('.');
    const raw = word.slice(eq + 1);
    if (keys.some((k) => k === '')) return `${JSON.stringify(word)} has an empty key`;
    if (raw === '') return `${JSON.stringify(word)} has no value (write ${word}"" for the empty string)`;
    let at: PayloadFilter = root;
    for (const [i, key] of keys.entries()) {
      const last = i === keys.length - 1;
      const existing = Object.hasOwn(at, key) ? at[key] : undefined;
      if (last) {
        if (existing !== undefined) return `${keys.join('.')} is given twice`;
        Object.defineProperty(at, key, { value: valueOf(raw), enumerable: true, writable: true });
      } else if (existing === undefined) {
        const inner: PayloadFilter = {};
        Object.defineProperty(at, key, { value: inner, enumerable: true, writable: true });
        at = inner;
      } else if (typeof existing === 'object' && existing !== null && !Array.isArray(existing)) {
        at = existing;
      } else {
        return `${keys.slice(0, i + 1).join('.')} is given a value and keys inside it`;
      }
    }
  }
  return root;
}

/**
 * The JSON document `text` asks the payload to contain, or why it cannot be read (the reason names
 * what is wrong and shows both ways to write a filter).
 */
export function payloadFilterParse(text: string): { filter: PayloadFilter } | { problem: string } {
  const trimmed = text.trim();
  let filter: PayloadFilter;
  if (trimmed.startsWith('{')) {
    let value: unknown;
    try {
      value = JSON.parse(trimmed);
    } catch (error) {
      return { problem: `is not valid JSON (${(error as Error).message}): ${HOW}` };
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      return { problem: `must be a JSON object: ${HOW}` };
    }
    filter = value as PayloadFilter;
  } else if (trimmed.startsWith('[')) {
    return { problem: `must be a JSON object, not an array: ${HOW}` };
  } else {
    const pairs = pairsFilter(trimmed);
    if (typeof pairs === 'string') return { problem: pairs };
    filter = pairs;
  }
  const [problem] = jsonProblems(filter, 'payload', 1);
  if (problem !== undefined)
    return { problem: `${problem.field.replace(/^payload\.?/, '')} ${problem.reason}`.trim() };
  return { filter };
}

/**
 * The client's payload filter: the text an operator types, or the object itself (a plain JSON
 * object). Returns the document, or the problem to report under `field`.
 */
export function payloadFilterOf(value: unknown): { filter: PayloadFilter } | { problem: string } {
  if (typeof value === 'string') return payloadFilterParse(value);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { problem: 'must be a JSON object ({ customer: 42 }) or the text form (customer=42)' };
  }
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch {
    json = undefined;
  }
  if (json === undefined) return { problem: 'must be JSON-serialisable' };
  if (json.length > PAYLOAD_FILTER_MAX)
    return { problem: `must be at most ${PAYLOAD_FILTER_MAX} characters as JSON` };
  return payloadFilterParse(json);
}
