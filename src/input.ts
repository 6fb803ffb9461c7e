/**
 * Checks every input boundary shares (the HTTP API's schemas and the TypeScript clients), for values
 * PostgreSQL would refuse with an error of its own or silently read as something else: text with a
 * NUL or an unpaired surrogate, JSON nested past a fixed depth, integers written loosely ("9.5",
 * "0x9", "+9") and date-times that do not exist in the calendar. Pure: no I/O, no dependencies.
 */

/** A bad value: where it is (`body.payload.a`, `query.limit`) and why. */
export interface InputProblem {
  field: string;
  reason: string;
}

/**
 * Deepest JSON nesting accepted anywhere (payloads, progress, signal data). Deep enough for any
 * document a person writes; a 5,000-deep payload (a 10 KB body) overflowed recursive code paths.
 */
export const MAX_JSON_DEPTH = 64;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why PostgreSQL cannot store `s` as text or inside jsonb, or undefined when it can. */
export function textProblem(s: string): string | undefined {
  if (s.includes('\u0000')) return 'contains a NUL character (U+0000), which PostgreSQL cannot store';
  const m = LONE_SURROGATE.exec(s);
  if (m !== null) {
    const hex = (m[0].codePointAt(0) ?? 0).toString(16).toUpperCase();
    return `contains an unpaired surrogate (U+${hex}), which is not valid Unicode`;
  }
  return undefined;
}

/**
 * Problems in a parsed JSON value, walked with an explicit stack (never recursion, whatever the
 * depth): text that PostgreSQL refuses in strings and keys, `__proto__` keys (refused by name:
 * code that copies objects with assignment would set a prototype from them), and nesting deeper
 * than MAX_JSON_DEPTH. Stops after `limit` problems.
 */
export function jsonProblems(value: unknown, at: string, limit = 20): InputProblem[] {
  const problems: InputProblem[] = [];
  const stack: { value: unknown; path: string; depth: number }[] = [{ value, path: at, depth: 0 }];
  while (stack.length > 0 && problems.length < limit) {
    const item = stack.pop();
    if (item === undefined) break;
    const v = item.value;
    if (typeof v === 'string') {
      const reason = textProblem(v);
      if (reason !== undefined) problems.push({ field: item.path, reason });
      continue;
    }
    if (typeof v !== 'object' || v === null) continue;
    if (item.depth >= MAX_JSON_DEPTH) {
      problems.push({ field: item.path, reason: `is nested deeper than ${MAX_JSON_DEPTH} levels` });
      continue;
    }
    const depth = item.depth + 1;
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--)
        stack.push({ value: v[i] as unknown, path: `${item.path}.${i}`, depth });
      continue;
    }
    const keys = Object.keys(v);
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i] ?? '';
      const path = `${item.path}.${key}`;
      if (key === '__proto__') {
        problems.push({ field: path, reason: 'is not accepted as a key' });
        continue;
      }
      const keyReason = textProblem(key);
      if (keyReason !== undefined) {
        problems.push({ field: path, reason: `key ${keyReason}` });
        continue;
      }
      stack.push({ value: (v as Record<string, unknown>)[key], path, depth });
    }
  }
  return problems;
}

// In JSON.stringify's output a NUL is always the escape \u0000 and an unpaired surrogate always
// \udXXX (paired ones are written as themselves); an odd run of backslashes before it makes it one.
const BAD_ESCAPE = /(?<!\\)(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/i;

/**
 * Why JSON text made by JSON.stringify cannot be stored as jsonb (NUL, unpaired surrogate, nesting
 * past MAX_JSON_DEPTH), or undefined. A scan of the text: cheaper than walking the value for the
 * client's batch enqueue, where the text is made anyway.
 */
export function jsonTextProblem(json: string): string | undefined {
  const escape = BAD_ESCAPE.exec(json);
  if (escape !== null) {
    return escape[0].endsWith('0000')
      ? 'contains a NUL character (U+0000), which PostgreSQL cannot store'
      : `contains an unpaired surrogate (U+${escape[0].slice(-4).toUpperCase()}), which is not valid Unicode`;
  }
  let depth = 0;
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > MAX_JSON_DEPTH) return `is nested deeper than ${MAX_JSON_DEPTH} levels`;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return undefined;
}

/**
 * A payload as the JSON text the insert sends, or why it cannot be stored: not serialisable (a
 * BigInt, a cycle, a function), or text jsonb refuses (jsonTextProblem).
 */
export function payloadJsonText(payload: unknown): { json: string } | { problem: string } {
  let json: string | undefined;
  try {
    json = JSON.stringify(payload);
  } catch {
    json = undefined;
  }
  if (json === undefined) return { problem: 'must be JSON-serialisable' };
  const problem = jsonTextProblem(json);
  return problem === undefined ? { json } : { problem };
}

/** Only `0` and `-?[1-9][0-9]*`: no sign `+`, no leading zeros, spaces, fractions, exponents or hex. */
const CANONICAL_INTEGER = /^(?:0|-?[1-9][0-9]*)$/;

/**
 * The integer written in `s` in canonical decimal, or undefined. Values past 2^53 come back
 * unrounded-looking but inexact, so callers bound them (a range check refuses them).
 */
export function parseCanonicalInteger(s: string): number | undefined {
  return CANONICAL_INTEGER.test(s) ? Number(s) : undefined;
}

const DATE_TIME =
  /^(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d)(?::(\d\d)(?:\.\d{1,9})?)?(?:[Zz]|([+-])(\d\d):(\d\d))$/;

function daysIn(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/**
 * Why `s` is not an RFC 3339 date-time with an offset that exists in the calendar, or undefined.
 * `Date.parse` alone reads 2026-02-30 as 2 March. Years 0001-9999: PostgreSQL has no year 0.
 */
export function dateTimeProblem(s: string): string | undefined {
  const m = DATE_TIME.exec(s);
  if (m === null) return 'must be an RFC 3339 date-time with an offset, e.g. 2026-03-01T09:00:00Z';
  const [year, month, day, hour, minute, second, , offH, offM] = m
    .slice(1)
    .map((part) => (part === undefined || part === '+' || part === '-' ? 0 : Number(part)));
  if (year === undefined || month === undefined || day === undefined) return 'is not a date';
  if (year < 1) return 'year must be from 0001 to 9999';
  if (month < 1 || month > 12) return `has no month ${m[2] ?? ''}`;
  if (day < 1 || day > daysIn(year, month)) return `${m[1] ?? ''}-${m[2] ?? ''} has no day ${m[3] ?? ''}`;
  if ((hour ?? 0) > 23 || (minute ?? 0) > 59 || (second ?? 0) > 59) return 'has no such time of day';
  if ((offH ?? 0) > 23 || (offM ?? 0) > 59) return 'has an offset out of range';
  return undefined;
}
