/**
 * The shared input checks (src/input.ts), and the TypeScript clients refusing through them what
 * PostgreSQL would otherwise refuse with an encoding error: the same rules as the HTTP API.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client } from '../../src/client.ts';
import {
  MAX_JSON_DEPTH,
  dateTimeProblem,
  jsonProblems,
  jsonTextProblem,
  parseCanonicalInteger,
  textProblem,
} from '../../src/input.ts';
import { ScheduleInputError } from '../../src/scheduler/schedule-client.ts';
import { JobValidationError } from '../../src/worker/errors.ts';
import { WorkflowValidationError } from '../../src/workflow/definition.ts';
import { databaseSnapshot } from '../api/support.ts';
import { createTestDatabase } from '../support/db.ts';

test('text: NUL and unpaired surrogates are named; paired surrogates (emoji) are fine', () => {
  assert.equal(textProblem('plain 😀 text'), undefined);
  assert.match(textProblem('a\u0000') ?? '', /NUL/);
  assert.match(textProblem('\ud800x') ?? '', /U\+D800/);
  assert.match(textProblem('x\udfff') ?? '', /U\+DFFF/);
  assert.match(textProblem('\udc00\ud800') ?? '', /unpaired/);
});

test('JSON text made by JSON.stringify: bad escapes and depth, not literal backslashes', () => {
  assert.equal(jsonTextProblem(JSON.stringify({ a: 'back\\u0000slash', b: '😀' })), undefined);
  assert.match(jsonTextProblem(JSON.stringify({ a: 'x\u0000' })) ?? '', /NUL/);
  assert.match(jsonTextProblem(JSON.stringify({ a: '\\\ud83d' })) ?? '', /U\+D83D/);
  assert.match(jsonTextProblem(JSON.stringify({ ['k\u0000']: 1 })) ?? '', /NUL/);
  const nest = (n: number): unknown => (n === 0 ? 1 : [nest(n - 1)]);
  assert.equal(jsonTextProblem(JSON.stringify(nest(MAX_JSON_DEPTH))), undefined);
  assert.match(jsonTextProblem(JSON.stringify(nest(MAX_JSON_DEPTH + 1))) ?? '', /deeper than 64/);
  assert.equal(jsonTextProblem(JSON.stringify({ s: '[[[[[[[[[['.repeat(20) })), undefined);
});

test('parsed JSON: every problem with its path, without recursion at any depth', () => {
  const deep = JSON.parse(`${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}`) as unknown;
  assert.equal(jsonProblems(deep, 'body')[0]?.reason, 'is nested deeper than 64 levels');
  assert.deepEqual(jsonProblems(JSON.parse('{"a":[1,"x\\u0000"],"__proto__":{}}'), 'body'), [
    { field: 'body.__proto__', reason: 'is not accepted as a key' },
    { field: 'body.a.1', reason: 'contains a NUL character (U+0000), which PostgreSQL cannot store' },
  ]);
});

test('integers: canonical decimal only', () => {
  assert.equal(parseCanonicalInteger('0'), 0);
  assert.equal(parseCanonicalInteger('-12'), -12);
  assert.equal(parseCanonicalInteger('9007199254740993'), 9007199254740992, 'callers bound the range');
  for (const s of ['9.5', '+9', '0x9', '9e0', ' 9', '9 ', '09', '-0', 'true', '', '1_0', '٩'])
    assert.equal(parseCanonicalInteger(s), undefined, s);
});

test('date-times exist in the calendar', () => {
  for (const ok of ['2026-02-28T00:00:00Z', '2028-02-29T23:59:59.999+14:00', '2000-02-29t00:00z'])
    assert.equal(dateTimeProblem(ok), undefined, ok);
  assert.equal(dateTimeProblem('2026-02-30T00:00:00Z'), '2026-02 has no day 30');
  assert.equal(dateTimeProblem('1900-02-29T00:00:00Z'), '1900-02 has no day 29');
  for (const bad of ['2026-02-01', '2026-00-01T00:00:00Z', '2026-01-01T00:60:00Z', '0000-01-01T00:00:00Z'])
    assert.ok(dateTimeProblem(bad) !== undefined, bad);
});

test('the clients refuse the same values, naming the field, and write nothing', async () => {
  const db = await createTestDatabase();
  const client = new Client({ pool: db.pool });
  const before = await databaseSnapshot(db);
  const jobCases: [object, RegExp][] = [
    [{ queue: 'q', kind: 'k\u0000' }, /^kind: .*NUL/],
    [{ queue: 'q', kind: 'k', payload: { a: '\ud800' } }, /^payload: .*U\+D800/],
    [{ queue: 'q', kind: 'k', idempotencyKey: 'x\u0000' }, /^idempotencyKey: .*NUL/],
    [
      { queue: 'q', kind: 'k', payload: JSON.parse(`${'['.repeat(65)}${']'.repeat(65)}`) as unknown },
      /^payload: .*deeper/,
    ],
  ];
  for (const [job, message] of jobCases) {
    await assert.rejects(client.jobs.enqueue(job), (e: unknown) => {
      return e instanceof JobValidationError && message.test(e.message);
    });
  }
  const target = { queue: 'q', kind: 'k' };
  for (const [input, field] of [
    [{ name: 'a\u0000', spec: '* * * * *', target }, 'name'],
    [{ name: 'a', spec: '* * * * *\u0000', target }, 'spec'],
    [{ name: 'a', spec: '* * * * *', timeZone: 'UTC\ud800', target }, 'timeZone'],
    [{ name: 'a', spec: '* * * * *', target: { ...target, payload: ['\u0000'] } }, 'target.payload'],
  ] as const) {
    await assert.rejects(client.schedules.create(input), (e: unknown) => {
      return e instanceof ScheduleInputError && e.fields[0]?.field === field;
    });
  }
  await assert.rejects(
    client.workflows.submit({ nodes: [{ id: 'a\u0000', kind: 'k' }] }),
    (e: unknown) => e instanceof WorkflowValidationError && e.fields[0]?.field === 'nodes.0.id',
  );
  await assert.rejects(
    client.workflows.submit({ nodes: [{ id: 'a', kind: 'k', payload: { x: '\udc00' } }] }),
    (e: unknown) => e instanceof WorkflowValidationError && e.fields[0]?.field === 'nodes.0.payload',
  );
  assert.equal(await databaseSnapshot(db), before);
});
