import assert from 'node:assert/strict';
import { execSync } from 'node:child_process';
import { chmod, chown, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { constants, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
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

async function startDev(
  dir: string,
  as?: { uid: number; gid: number },
): Promise<{ dev: TidemarkProcess; url: string }> {
  const dev = spawnTidemark(['dev', '--data-dir', dir], { env: EMBEDDED, ...as });
  const [, url] = await dev.waitFor(/DATABASE_URL=(\S+)/, 180_000);
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

/** Whether a user other than the owner can walk down to this checkout (CI may clone under /root). */
function checkoutReachableByOthers(): boolean {
  for (let dir = fileURLToPath(new URL('../..', import.meta.url)); dir !== dirname(dir); dir = dirname(dir)) {
    if ((statSync(dir).mode & constants.S_IXOTH) === 0) return false;
  }
  return true;
}

test('tidemark dev runs as a normal user too (as root the server runs as postgres; this covers the other path)', async (t) => {
  if (process.getuid?.() === 0 && !checkoutReachableByOthers()) {
    t.skip('this checkout sits under a folder only root can enter, so no other user can run it');
    return;
  }
  const dir = await dataDir();
  // Under root, become 'nobody'; as a normal user already, run as ourselves: either way a non-root dev.
  const as =
    process.getuid?.() === 0
      ? { uid: Number(execSync('id -u nobody')), gid: Number(execSync('id -g nobody')) }
      : undefined;
  if (as !== undefined) await chown(dir, as.uid, as.gid);
  const { dev, url } = await startDev(dir, as);
  const [row] = await query<{ user: string }>(url, 'SELECT current_user AS user');
  assert.equal(row?.user, 'tidemark');
  const owner = (await stat(join(dir, 'pg', 'PG_VERSION'))).uid;
  assert.equal(owner, as?.uid ?? process.getuid?.(), 'the cluster belongs to the user that ran dev');
  assert.equal((await dev.kill('SIGTERM')).code, 0, dev.stderr);
});

test('with DATABASE_URL set, tidemark dev uses that server and starts none', async () => {
  const db = await createTestDatabase();
  const dir = await dataDir();
  const dev = spawnTidemark(['dev', '--data-dir', dir], { env: { DATABASE_URL: db.url } });
  const [, url] = await dev.waitFor(/DATABASE_URL=(\S+)/, 180_000);
  assert.equal(url, db.url);
  await assert.rejects(readFile(join(dir, 'pg', 'PG_VERSION')), 'no cluster was created');
  assert.equal((await dev.kill('SIGTERM')).code, 0);
});

test("--queue http is refused: the push queue is dev's push worker's, and a handlers worker there would dead-letter push jobs", async () => {
  const dir = await dataDir();
  const dev = spawnTidemark(['dev', '--data-dir', dir, '--handlers', 'h.js', '--queue', 'http:5'], {
    env: EMBEDDED,
  });
  assert.equal((await dev.exited).code, 2);
  assert.match(dev.stderr, /--queue http:5: 'http' is the push queue/);
  await assert.rejects(readFile(join(dir, 'pg', 'PG_VERSION')), 'nothing was started');
});

test('a role that fails to start stops tidemark dev with an error and leaves no postgres running', async () => {
  const dir = await dataDir();
  const dev = spawnTidemark(['dev', '--data-dir', dir, '--handlers', join(dir, 'no-such-module.js')], {
    env: EMBEDDED,
  });
  const exit = await dev.exited;
  assert.notEqual(exit.code, 0);
  assert.match(dev.stderr, /no-such-module\.js/);
  const pid = await postmasterPid(dir).catch(() => undefined);
  assert.ok(pid === undefined || !isAlive(pid), 'the embedded server was stopped');
});

test('as root, tidemark dev runs with a data folder the postgres user cannot enter (its cluster goes to /var/lib/tidemark)', async (t) => {
  if (process.getuid?.() !== 0) {
    t.skip('only root runs the server as another user');
    return;
  }
  // mkdtemp makes a 0700 folder, as `mktemp -d` does; a project under /root is the same case.
  const locked = await mkdtemp(join(tmpdir(), 'tidemark-locked-'));
  after(() => rm(locked, { recursive: true, force: true }));
  const dir = join(locked, 'data');
  const first = await startDev(dir);
  const clusterDir = (await readFile(join(dir, 'cluster-location'), 'utf8')).split('\n')[0] ?? '';
  after(() => rm(dirname(clusterDir), { recursive: true, force: true }));
  assert.match(clusterDir, /^\/var\/lib\/tidemark\/[0-9a-f]{16}\/pg$/);
  assert.equal((await stat(join(clusterDir, 'PG_VERSION'))).uid, Number(execSync('id -u postgres')));
  await query(first.url, "INSERT INTO tenants (id, name) VALUES ('initech', 'Initech')");
  const pid = Number((await readFile(join(clusterDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
  assert.equal((await first.dev.kill('SIGTERM')).code, 0, first.dev.stderr);
  assert.equal(isAlive(pid), false, 'postgres stopped with dev');

  const second = await startDev(dir);
  const tenants = await query<{ id: string }>(second.url, "SELECT id FROM tenants WHERE id = 'initech'");
  assert.equal(tenants.length, 1, 'the next start finds the same cluster');
  assert.equal((await second.dev.kill('SIGTERM')).code, 0, second.dev.stderr);
});
