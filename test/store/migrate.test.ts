import assert from 'node:assert/strict';
import { cp, mkdtemp, readdir, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { loadMigrations, migrate } from '../../src/store/migrate.ts';
import { createEmptyDatabase, createTestDatabase, type TestDatabase } from '../support/db.ts';
import { spawnTidemark } from '../support/processes.ts';

const MIGRATIONS_DIR = fileURLToPath(new URL('../../src/store/migrations/', import.meta.url));

async function appliedVersions(db: TestDatabase): Promise<number[]> {
  const { rows } = await db.pool.query<{ version: number }>(
    'SELECT version FROM tidemark_migrations ORDER BY 1',
  );
  return rows.map((r) => r.version);
}

test('migrations apply in order on an empty database and are a no-op the second time', async () => {
  const db = await createEmptyDatabase();
  const all = await loadMigrations();
  assert.ok(all.length >= 1);

  const first = await migrate(db.pool);
  assert.deepEqual(
    first.applied.map((m) => m.version),
    all.map((m) => m.version),
  );
  const { rows } = await db.pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name IN ('schedules','occurrences','jobs','job_attempts','leases','queues','tenants')",
  );
  assert.equal(rows[0]?.n, 7);

  const second = await migrate(db.pool);
  assert.deepEqual(second.applied, []);
  assert.equal(second.alreadyApplied, all.length);
  assert.deepEqual(
    await appliedVersions(db),
    all.map((m) => m.version),
  );
});

test('four processes migrating one empty database at once apply each migration exactly once', async () => {
  const db = await createEmptyDatabase();
  const all = await loadMigrations();
  const processes = Array.from({ length: 4 }, () =>
    spawnTidemark(['migrate'], { env: { DATABASE_URL: db.url } }),
  );
  const exits = await Promise.all(processes.map((p) => p.exited));
  for (const [i, exit] of exits.entries()) assert.equal(exit.code, 0, processes[i]?.stderr);

  const appliedLines = processes.flatMap((p) => p.stdout.split('\n').filter((l) => l.startsWith('applied ')));
  assert.equal(appliedLines.length, all.length, 'each migration reported applied by exactly one process');
  assert.deepEqual(
    await appliedVersions(db),
    all.map((m) => m.version),
  );
});

test('an applied migration that was edited afterwards is refused, naming the file', async () => {
  const db = await createEmptyDatabase();
  const dir = await mkdtemp(join(tmpdir(), 'tidemark-migrations-'));
  await cp(MIGRATIONS_DIR, dir, { recursive: true });
  await migrate(db.pool, dir);

  const [firstFile] = (await readdir(dir)).sort();
  assert.ok(firstFile !== undefined);
  await appendFile(join(dir, firstFile), '\n-- an innocent-looking edit\n');
  await assert.rejects(migrate(db.pool, dir), (error: Error) => {
    assert.match(error.message, new RegExp(`migration ${firstFile} was edited after it was applied`));
    return true;
  });
});

test('start-up (tidemark migrate) stops with the file name when the database holds a different checksum', async () => {
  const db = await createTestDatabase();
  await db.pool.query("UPDATE tidemark_migrations SET checksum = 'edited' WHERE version = 1");
  const migrator = spawnTidemark(['migrate'], { env: { DATABASE_URL: db.url } });
  const exit = await migrator.exited;
  assert.equal(exit.code, 1);
  assert.match(migrator.stderr, /migration 0001_core\.sql was edited after it was applied/);
});

test('a database newer than the code is refused', async () => {
  const db = await createTestDatabase();
  await db.pool.query(
    "INSERT INTO tidemark_migrations (version, file, checksum) VALUES (9999, '9999_future.sql', 'x')",
  );
  await assert.rejects(
    migrate(db.pool),
    /9999_future\.sql is applied to this database but missing from this build/,
  );
});
