// The README's TypeScript examples, run as written against a real database.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { handlersLoad } from '../../src/cli/handlers-module.ts';
import { Client, TidemarkError, ValidationError } from '../../src/index.ts';
import { formatLocal } from '../../src/schedule/index.ts';
import { createTestDatabase } from '../support/db.ts';

const db = await createTestDatabase();

test("the README's client example registers a schedule and enqueues a job, once per idempotency key", async () => {
  await using client = new Client({ connectionString: db.url });
  const schedule = await client.schedules.create({
    name: 'nightly-report',
    spec: 'every day at 2am',
    timeZone: 'America/New_York',
    target: { queue: 'reports', kind: 'nightly', payload: { format: 'pdf' } },
  });
  const job = await client.jobs.enqueue({
    queue: 'emails',
    kind: 'welcome',
    payload: { to: 'a@example.com' },
    idempotencyKey: 'welcome:a@example.com',
  });

  assert.ok(schedule.nextFireAt !== null);
  assert.match(formatLocal(schedule.nextFireAt, 'America/New_York'), /T02:00:00-0[45]:00$/);
  const again = await client.jobs.enqueue({
    queue: 'emails',
    kind: 'welcome',
    idempotencyKey: 'welcome:a@example.com',
  });
  assert.equal(again.id, job.id, 'the same key returns the same job');
  const { rows } = await db.pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM jobs WHERE queue = 'emails'",
  );
  assert.equal(rows[0]?.n, 1);
});

test("the README's errors example: a bad field is a ValidationError, a missing id null or not_found", async () => {
  const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
  const logged: unknown[][] = [];
  const console = { log: (...args: unknown[]) => void logged.push(args) };
  await using client = new Client({ connectionString: db.url });
  try {
    await client.jobs.enqueue({ queue: 'emails', kind: 'welcome', priority: 5_000_000 });
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    console.log(error.code, error.fields); // invalid_request [{ field: 'priority', reason: 'Expected integer to be less or equal to 1000000' }]
  }
  console.log(await client.jobs.get(987654321)); // null
  await client.jobs.cancel(987654321).catch((error: unknown) => {
    if (!(error instanceof TidemarkError && error.code === 'not_found')) throw error;
  });

  assert.deepEqual(logged, [
    ['invalid_request', [{ field: 'priority', reason: 'Expected integer to be less or equal to 1000000' }]],
    [null],
  ]);
  assert.ok(readme.includes('priority: 5_000_000 });'), 'the README shows this example');
  assert.ok(readme.includes("reason: 'Expected integer to be less or equal to 1000000'"));
});

test("the README's handlers module loads as --handlers loads it, and its handler runs", async () => {
  const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
  const source = /```ts\n\/\/ handlers\.ts\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(source !== undefined, 'the README has a handlers.ts example');
  const dir = await mkdtemp(join(tmpdir(), 'tidemark-readme-'));
  after(() => rm(dir, { recursive: true, force: true }));
  // A TypeScript project has tsx (Node 20 needs it for .ts handlers; README says so).
  await symlink(new URL('../../node_modules', import.meta.url).pathname, join(dir, 'node_modules'));
  await writeFile(join(dir, 'handlers.ts'), source);
  const { welcome } = await handlersLoad(join(dir, 'handlers.ts'));
  assert.ok(welcome !== undefined);
  const beats: unknown[] = [];
  const ctx = {
    payload: { to: 'a@example.com' },
    heartbeat: (p?: unknown) => Promise.resolve(void beats.push(p)),
  };
  assert.deepEqual(await welcome(ctx as unknown as Parameters<typeof welcome>[0]), { sent: 'a@example.com' });
  assert.deepEqual(beats, [{ step: 'rendering' }]);
});
