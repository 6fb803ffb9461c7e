/**
 * Hostile values for the fuzz test, by class: text PostgreSQL cannot store, loosely written numbers,
 * huge strings and numbers, wrong types, impossible dates, invalid zones and specs, deep nesting,
 * `__proto__` keys. Each arbitrary is a fast-check generator, so a failure shrinks and replays by seed.
 */
import fc from 'fast-check';

const deep = (n: number): unknown => {
  let v: unknown = 'bottom';
  for (let i = 0; i < n; i++) v = i % 2 === 0 ? [v] : { d: v };
  return v;
};

/** Text for any position: path segment, query value, body string. */
export const hostileText = fc.oneof(
  fc.constantFrom(
    'a\u0000b',
    '\u0000',
    '\ud800',
    'x\udfff',
    '\udc00\ud800',
    '',
    ' ',
    '%00',
    '..',
    '../../etc/passwd',
    '\u202e\u0301',
    'a'.repeat(5000),
  ),
  // Loosely written numbers: none may act on the resource the canonical number names.
  fc.constantFrom(
    '9.5',
    '+9',
    '0x9',
    '9e0',
    ' 9',
    '9 ',
    '09',
    '-0',
    '-1',
    '0',
    'true',
    'null',
    '1e400',
    'Infinity',
    'NaN',
    '٩',
    '99999999999999999999',
  ),
  // Impossible dates, invalid zones, invalid specs.
  fc.constantFrom(
    '2026-02-30T00:00:00Z',
    '2025-02-29T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '0000-01-01T00:00:00Z',
    '2026-01-01T24:00:00Z',
    '2026-01-01',
    '+275760-09-13T00:00:00Z',
    'Mars/Olympus',
    'Europe/Berlin\u0000',
    'UTC+25',
    '61 * * * *',
    'every 0s',
    'at 2026-02-30T09:00',
    '* * * * * * * *',
    'every 99999999999 days',
    '@reboot',
  ),
  fc.string({ maxLength: 40, unit: 'binary' }),
  fc.string({ maxLength: 20, unit: 'grapheme' }),
);

/** Any JSON value a body field might get instead of its own. */
export const hostileJson: fc.Arbitrary<unknown> = fc.oneof(
  hostileText,
  fc.constantFrom<unknown>(
    1.5,
    -1,
    0,
    2 ** 31,
    -(2 ** 31) - 1,
    2 ** 53 + 2,
    1e308,
    -1e308,
    true,
    false,
    null,
    [],
    {},
    [1, 2, 3],
    { a: 1 },
    ['a\u0000'],
    { 'k\u0000': 1 },
    { '\ud800': 'x' },
    deep(70),
    deep(2000),
    JSON.parse('{"__proto__": {"polluted": true}}') as unknown,
    'x'.repeat(300_000),
  ),
  fc.integer(),
  fc.double(),
  fc.jsonValue({ maxDepth: 4 }),
);

/** `value` with one hostile value put somewhere inside it (or in its place when it is a scalar). */
export function hostileInside(value: unknown): fc.Arbitrary<unknown> {
  if (typeof value !== 'object' || value === null) return hostileJson;
  const items: unknown[] | undefined = Array.isArray(value) ? (value as unknown[]) : undefined;
  const keys = items !== undefined ? items.map((_, i) => String(i)) : Object.keys(value);
  const key =
    keys.length > 0
      ? fc.oneof(fc.constantFrom(...keys), fc.constantFrom('unknownField', '__proto__'))
      : fc.constant('unknownField');
  return fc.tuple(key, hostileJson).map(([k, v]) => {
    const copy = (items !== undefined ? [...items] : { ...value }) as Record<string, unknown>;
    Object.defineProperty(copy, k, { value: v, enumerable: true, writable: true, configurable: true });
    return copy;
  });
}

/** Percent-encodes every UTF-8 byte, so any text (a lone surrogate too) can go into a URL. */
export function urlEncode(text: string): string {
  return Array.from(Buffer.from(text, 'utf8'), (b) => `%${b.toString(16).padStart(2, '0')}`).join('');
}
