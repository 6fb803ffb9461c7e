/**
 * `npm test`: one PostgreSQL for the whole run, a migrated template database, then node's test runner
 * over every test file (or the files named on the command line). Each file clones the template into a
 * database of its own (test/support/db.ts), so files run in parallel and leave nothing behind.
 * Files named `*.alone.test.ts` hold a bound on time that the story itself sets (a takeover within
 * TTL + tick, a page load under a second); they run after the others, one at a time, so the bound
 * is measured on this machine rather than on this machine running eight other test files.
 *
 * PostgreSQL is DATABASE_URL when set (its role needs CREATEDB); otherwise an embedded server in a
 * temporary folder, tuned for throwaway data (no fsync), stopped and deleted at the end. The other
 * tools the tests drive (faketime, Chromium) are installed first where missing (test-tools.ts).
 *
 * No run can hang: each test and each file has a time limit, a file's process exits once its tests are done even
 * if a handle is left open, and the whole run is ended past RUN_LIMIT_MS with the files it was in.
 */
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { databaseCreate, databaseDrop, databaseListByPrefix, databaseUrl } from '../src/store/databases.ts';
import { DEFAULT_EMBEDDED_PORT, startEmbedded, type EmbeddedServer } from '../src/store/embedded.ts';
import { migrate } from '../src/store/migrate.ts';
import { createPool } from '../src/store/pool.ts';
import { testToolsProvision } from './test-tools.ts';

const PREFIX = 'tmt_';
// A run killed midway leaves its databases behind; the next run drops those older than this.
const STALE_AFTER_S = 6 * 3600;

async function testFiles(args: string[]): Promise<string[]> {
  if (args.length > 0) return args;
  const entries = await readdir('test', { recursive: true });
  return entries
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => join('test', f))
    .sort();
}

async function dropStale(adminUrl: string, nowS: number): Promise<void> {
  for (const name of await databaseListByPrefix(adminUrl, PREFIX)) {
    const started = Number(name.split('_')[1]);
    if (Number.isFinite(started) && nowS - started > STALE_AFTER_S) await databaseDrop(adminUrl, name);
  }
}

const ALONE = '.alone.test.ts';
// Node applies it to each test file as a whole too; the longest file (test/cli/dev.test.ts, eight
// embedded-server starts) takes about a minute alone and passed 5 on a machine loaded 15 times over.
const TEST_LIMIT_MS = 10 * 60_000;
// CI allows 90 minutes for everything; a whole run takes about 5.
const RUN_LIMIT_MS = 40 * 60_000;

function runNodeTests(files: string[], env: NodeJS.ProcessEnv, concurrency: string): Promise<number> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--test',
      `--test-concurrency=${concurrency}`,
      `--test-timeout=${TEST_LIMIT_MS}`,
      '--test-force-exit',
      '--test-reporter=spec',
      ...files,
    ],
    { stdio: 'inherit', env },
  );
  const limit = setTimeout(() => {
    process.stderr.write(`test: the run passed ${RUN_LIMIT_MS / 60_000} minutes; stopping it\n`);
    child.kill('SIGKILL');
  }, RUN_LIMIT_MS);
  return new Promise((done) =>
    child.on('exit', (code, signal) => {
      clearTimeout(limit);
      done(code ?? (signal === null ? 1 : 128));
    }),
  );
}

async function main(): Promise<number> {
  const files = await testFiles(process.argv.slice(2));
  try {
    testToolsProvision((line) => process.stderr.write(`${line}\n`));
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  const nowS = Math.floor(Date.now() / 1000);
  const runId = `${PREFIX}${nowS}_${randomBytes(3).toString('hex')}`;
  let embedded: EmbeddedServer | undefined;
  let dataDir: string | undefined;
  let adminUrl = process.env.DATABASE_URL;
  if (adminUrl === undefined || adminUrl === '') {
    dataDir = await mkdtemp(join(tmpdir(), 'tidemark-test-'));
    // As root the server runs as 'postgres', which must be able to enter the folder.
    await chmod(dataDir, 0o755);
    process.stderr.write(`test: starting embedded PostgreSQL in ${dataDir}\n`);
    embedded = await startEmbedded({
      dataDir,
      port: DEFAULT_EMBEDDED_PORT + 1,
      settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off', max_connections: '500' },
    });
    adminUrl = embedded.adminUrl;
  }
  try {
    await dropStale(adminUrl, nowS);
    const template = `${runId}_template`;
    await databaseCreate(adminUrl, template);
    const pool = createPool({ connectionString: databaseUrl(adminUrl, template), max: 1 });
    try {
      await migrate(pool);
    } finally {
      await pool.end();
    }
    const env = {
      ...process.env,
      TIDEMARK_TEST_ADMIN_URL: adminUrl,
      TIDEMARK_TEST_TEMPLATE: template,
      TIDEMARK_TEST_RUN: runId,
    };
    const together = files.filter((f) => !f.endsWith(ALONE));
    const alone = files.filter((f) => f.endsWith(ALONE));
    let code = 0;
    if (together.length > 0) {
      code = await runNodeTests(together, env, process.env.TIDEMARK_TEST_CONCURRENCY ?? '4');
    }
    if (alone.length > 0) {
      process.stderr.write(`test: ${alone.length} file(s) with a time bound, one at a time\n`);
      code = Math.max(code, await runNodeTests(alone, env, '1'));
    }
    return code;
  } finally {
    for (const name of await databaseListByPrefix(adminUrl, runId)) await databaseDrop(adminUrl, name);
    await embedded?.stop();
    if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
