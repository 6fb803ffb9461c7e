/**
 * The reference every worker number is read against: PostgreSQL's own pgbench running a single-row
 * UPDATE (a random row of 100,000, by primary key), 8 clients, 20 s, on the same server and in the
 * same run, so a result reads as a ratio ("5× pgbench") that survives a slower or busier machine.
 * Measured once per `npm run bench` process and shared by the benches that quote it.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
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

const cached = new Map<number, Promise<number>>();

/**
 * pgbench TPS for the 1-row UPDATE script against the database at `url` (whose `pool` is given):
 * 8 clients is P; 1 client is the floor of anything that commits once per job from one connection
 * (each commit waits for its own WAL flush, where 8 clients share flushes).
 */
export function pgbenchTps(url: string, pool: Pool, clients = CLIENTS): Promise<number> {
  let tps = cached.get(clients);
  if (tps === undefined) {
    tps = measure(url, pool, clients);
    cached.set(clients, tps);
  }
  return tps;
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
