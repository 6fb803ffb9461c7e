// The README's TypeScript example, run as written against a real database.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client } from '../../src/index.ts';
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
