/**
 * The reference every worker number is read against: PostgreSQL's own pgbench running a single-row
 * UPDATE (a random row of 100,000, by primary key), 8 clients, 20 s, on the same server and in the
 * same run, so a result reads as a ratio ("5× pgbench") that survives a slower or busier machine.
 * Measured once per `npm run bench` process and shared by the benches that quote it.
 *
 * P measures the CPU the machine has to spare at that moment, not only the database: 8 pgbench
 * clients and their 8 backends on 2 cores are CPU-bound. The same code path, back to back on one
 * server, gave 4,495, 3,440 and 2,076 TPS while the load average rose from 3 to 4, and 1,138-1,826
 * at load 7-9; a quiet machine gives ~6,000-8,400. So a P from another run (1,939 in one workflow
 * bench, 6,221 in one worker bench) says how busy the machine was, and a ratio is only sound against
 * a P taken under the same load: each reading carries the load average it was taken at, and a long
 * bench can take a fresh one at its end to show whether the load moved under it.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Pool } from '../src/store/pool.ts';

const run = promisify(execFile);
const ROWS = 100_000;
const CLIENTS = 8;
const SECONDS = Number(process.env.TIDEMARK_PGBENCH_SECONDS ?? 20);

function pgbenchBinary(): string {
  for (const candidate of ['/usr/lib/postgresql/15/bin/pgbench', '/usr/bin/pgbench']) {
    if (existsSync(candidate)) return candidate;
  }
  return 'pgbench'; // on PATH, or the error names it
}

export interface PgbenchReading {
  tps: number;
  /** One-minute load average when the measurement ended. */
  load: number;
}

const cached = new Map<number, Promise<PgbenchReading>>();

/**
 * pgbench TPS for the 1-row UPDATE script against the database at `url` (whose `pool` is given):
 * 8 clients is P; 1 client is the floor of anything that commits once per job from one connection
 * (each commit waits for its own WAL flush, where 8 clients share flushes).
 */
export async function pgbenchTps(url: string, pool: Pool, clients = CLIENTS): Promise<number> {
  return (await pgbenchReading(url, pool, clients)).tps;
}

/** As `pgbenchTps`, with the load average; measured once per process and client count. */
export function pgbenchReading(url: string, pool: Pool, clients = CLIENTS): Promise<PgbenchReading> {
  let reading = cached.get(clients);
  if (reading === undefined) {
    reading = pgbenchMeasure(url, pool, clients);
    cached.set(clients, reading);
  }
  return reading;
}

/** A new measurement, not the one shared by this process's benches: P again after a long bench. */
export async function pgbenchMeasure(url: string, pool: Pool, clients = CLIENTS): Promise<PgbenchReading> {
  const tps = await measure(url, pool, clients);
  return { tps, load: loadavg()[0] ?? 0 };
}

async function measure(url: string, pool: Pool, clients: number): Promise<number> {
  await pool.query(
    'CREATE TABLE IF NOT EXISTS bench_pgbench (id int PRIMARY KEY, v bigint NOT NULL DEFAULT 0)',
  );
  await pool.query(
    `INSERT INTO bench_pgbench (id) SELECT generate_series(1, ${ROWS}) ON CONFLICT DO NOTHING`,
  );
  await pool.query('VACUUM ANALYZE bench_pgbench');
  const dir = await mkdtemp(join(tmpdir(), 'tidemark-pgbench-'));
  try {
    const script = join(dir, 'update.sql');
    await writeFile(
      script,
      `\\set id random(1, ${ROWS})\nUPDATE bench_pgbench SET v = v + 1 WHERE id = :id;\n`,
    );
    const u = new URL(url);
    const env = { ...process.env, PGPASSWORD: decodeURIComponent(u.password) };
    const args = [
      '-n',
      '-c',
      String(clients),
      '-j',
      String(Math.min(clients, 2)),
      '-T',
      String(SECONDS),
      '-f',
      script,
    ];
    args.push('-h', u.hostname, '-p', u.port || '5432', '-U', decodeURIComponent(u.username) || 'postgres');
    args.push(decodeURIComponent(u.pathname.slice(1)));
    const { stdout } = await run(pgbenchBinary(), args, { env });
    const match = /tps = ([\d.]+) \(without initial connection time\)/.exec(stdout);
    if (match?.[1] === undefined) throw new Error(`pgbench printed no tps:\n${stdout}`);
    return Number(match[1]);
  } finally {
    await rm(dir, { recursive: true, force: true });
    await pool.query('DROP TABLE IF EXISTS bench_pgbench');
  }
}
