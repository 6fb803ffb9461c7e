import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import pg from 'pg';
import { createTestDatabase } from '../support/db.ts';
import { spawnTidemark, type TidemarkProcess } from '../support/processes.ts';

// These tests exercise the embedded path, so the children never see the run's DATABASE_URL.
const EMBEDDED = { DATABASE_URL: undefined };

async function dataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tidemark-dev-'));
  await chmod(dir, 0o755); // as root, PostgreSQL runs as 'postgres' and must enter it
  after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function startDev(dir: string): Promise<{ dev: TidemarkProcess; url: string }> {
  const dev = spawnTidemark(['dev', '--data-dir', dir], { env: EMBEDDED });
  const [, url] = await dev.waitFor(/DATABASE_URL=(\S+)/, 90_000);
  assert.ok(url !== undefined);
  return { dev, url };
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

async function postmasterPid(dir: string): Promise<number> {
  return Number((await readFile(join(dir, 'pg', 'postmaster.pid'), 'utf8')).split('\n')[0]);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test('tidemark dev starts an embedded PostgreSQL, migrates, and stops it cleanly on SIGTERM', async () => {
  const dir = await dataDir();
  const { dev, url } = await startDev(dir);
  const rows = await query<{ version: number }>(url, 'SELECT version FROM tidemark_migrations');
  assert.ok(rows.length >= 1);
  const pid = await postmasterPid(dir);

  const exit = await dev.kill('SIGTERM');
  assert.equal(exit.code, 0, dev.stderr);
  assert.match(dev.stdout, /Tidemark dev stopped/);
  assert.equal(isAlive(pid), false, 'postgres stopped with dev');
});

test('tidemark dev comes back after being SIGKILLed, with its orphaned postgres, and keeps the data', async () => {
  const dir = await dataDir();
  const first = await startDev(dir);
  await query(first.url, "INSERT INTO tenants (id, name) VALUES ('acme', 'Acme')");
  const orphan = await postmasterPid(dir);

  await first.dev.kill('SIGKILL');
  assert.equal(isAlive(orphan), true, 'postgres outlives a SIGKILLed dev');

  const second = await startDev(dir);
  assert.equal(isAlive(orphan), false, 'the orphan was shut down');
  const tenants = await query<{ id: string }>(second.url, "SELECT id FROM tenants WHERE id = 'acme'");
  assert.equal(tenants.length, 1);
  assert.equal((await second.dev.kill('SIGTERM')).code, 0);
});

test('tidemark dev recovers when both it and its postgres were SIGKILLed (stale postmaster.pid)', async () => {
  const dir = await dataDir();
  const first = await startDev(dir);
  await query(first.url, "INSERT INTO tenants (id, name) VALUES ('globex', 'Globex')");
  const postmaster = await postmasterPid(dir);
  await first.dev.kill('SIGKILL');
  process.kill(postmaster, 'SIGKILL');

  const second = await startDev(dir);
  const tenants = await query<{ id: string }>(second.url, "SELECT id FROM tenants WHERE id = 'globex'");
  assert.equal(tenants.length, 1, 'committed data survives crash recovery');
  assert.equal((await second.dev.kill('SIGTERM')).code, 0);
});

test('tidemark dev takes a free port when the default one is taken', async () => {
  const a = await startDev(await dataDir());
  const b = await startDev(await dataDir());
  assert.notEqual(new URL(a.url).port, new URL(b.url).port);
  await Promise.all([a.dev.kill('SIGTERM'), b.dev.kill('SIGTERM')]);
});

test('with DATABASE_URL set, tidemark dev uses that server and starts none', async () => {
  const db = await createTestDatabase();
  const dir = await dataDir();
  const dev = spawnTidemark(['dev', '--data-dir', dir], { env: { DATABASE_URL: db.url } });
  const [, url] = await dev.waitFor(/DATABASE_URL=(\S+)/);
  assert.equal(url, db.url);
  await assert.rejects(readFile(join(dir, 'pg', 'PG_VERSION')), 'no cluster was created');
  assert.equal((await dev.kill('SIGTERM')).code, 0);
});
