/**
 * Every long-running role refuses a database whose schema is not this build's, in one line and with
 * exit code 1, and writes nothing: not migrated at all, or migrated by a newer build.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadMigrations } from '../../src/store/migrate.ts';
import { createEmptyDatabase, createTestDatabase, type TestDatabase } from '../support/db.ts';
import { spawnTidemark } from '../support/processes.ts';

const HANDLERS = fileURLToPath(new URL('../worker/fixtures/handlers.ts', import.meta.url));
const ROLES: [string, string[]][] = [
  ['worker', ['worker', '--handlers', HANDLERS]],
  ['scheduler', ['scheduler']],
  ['api', ['api', '--port', '0']],
  ['push', ['push']],
];

async function run(db: TestDatabase, args: string[]): Promise<{ code: number | null; stderr: string }> {
  const p = spawnTidemark(args, { env: { DATABASE_URL: db.url, TIDEMARK_LOG_LEVEL: 'warn' } });
  const exit = await p.exited;
  return { code: exit.code, stderr: p.stderr };
}

async function tableCount(db: TestDatabase): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'`,
  );
  return rows[0]!.n;
}

test('worker, scheduler, api and push against an unmigrated database: one line naming the fix, exit 1, nothing created', async () => {
  const db = await createEmptyDatabase();
  const latest = (await loadMigrations()).at(-1)!;
  for (const [role, args] of ROLES) {
    const { code, stderr } = await run(db, args);
    assert.equal(code, 1, `${role}: ${stderr}`);
    assert.equal(
      stderr,
      `tidemark ${role}: the database has no Tidemark schema (this build needs version ${latest.version} (${latest.file})): run 'tidemark migrate' first\n`,
    );
  }
  assert.equal(await tableCount(db), 0, 'no role migrated or created anything');
});

test('worker, scheduler, api and push against a database migrated by a newer build: one line, exit 1', async () => {
  const db = await createTestDatabase();
  const latest = (await loadMigrations()).at(-1)!;
  const future = latest.version + 1;
  const file = `${String(future).padStart(4, '0')}_from_the_future.sql`;
  await db.pool.query(`INSERT INTO tidemark_migrations (version, file, checksum) VALUES ($1, $2, 'x')`, [
    future,
    file,
  ]);
  for (const [role, args] of ROLES) {
    const { code, stderr } = await run(db, args);
    assert.equal(code, 1, `${role}: ${stderr}`);
    assert.equal(
      stderr,
      `tidemark ${role}: the database's schema is at version ${future} (${file}), newer than this build (${latest.version} (${latest.file})): run the Tidemark version that migrated it, or newer\n`,
    );
  }
});

test('a database one migration behind: the role names both versions', async () => {
  const db = await createTestDatabase();
  const latest = (await loadMigrations()).at(-1)!;
  await db.pool.query('DELETE FROM tidemark_migrations WHERE version = $1', [latest.version]);
  const { code, stderr } = await run(db, ROLES[0]![1]);
  assert.equal(code, 1, stderr);
  assert.equal(
    stderr,
    `tidemark worker: the database's schema is at version ${latest.version - 1}, this build needs ${latest.version} (${latest.file}): run 'tidemark migrate' first\n`,
  );
});
