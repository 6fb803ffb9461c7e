/**
 * Every Tidemark connection starts with JIT and parallel query off, and docs/production.md shows
 * an application's own pool the same options.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { CONNECTION_OPTIONS } from '../../src/store/pool.ts';
import { createTestDatabase } from '../support/db.ts';

test("a pool's connections run without JIT and parallel workers, as docs/production.md tells an own pool to", async () => {
  const { pool } = await createTestDatabase();
  const { rows } = await pool.query<{ jit: string; workers: string }>(
    `SELECT current_setting('jit') AS jit, current_setting('max_parallel_workers_per_gather') AS workers`,
  );
  assert.deepEqual(rows[0], { jit: 'off', workers: '0' });
  const production = await readFile(new URL('../../docs/production.md', import.meta.url), 'utf8');
  assert.ok(production.includes(`options: '${CONNECTION_OPTIONS}'`));
});
