/**
 * The connection pool and transaction helper. Everything that talks to PostgreSQL goes through a
 * `Queryable` so a statement can run on the pool or inside a caller's transaction alike.
 */
import pg from 'pg';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
export type Queryable = Pick<pg.Pool, 'query'> | Pick<pg.PoolClient, 'query'>;

export interface PoolOptions {
  connectionString: string;
  max?: number;
  applicationName?: string;
  /**
   * How long opening a connection (TCP, TLS, startup) or waiting for a free one may take before the
   * caller gets an error. Without it, a database whose packets are dropped leaves the caller waiting
   * for as long as the kernel retries the SYN/data (minutes), so the API could not answer 503.
   * It also bounds the wait for a free connection when all `max` are busy. It does not bound a query
   * on a connection that was already open when the packets stopped: keepalive (below) ends those,
   * but only after its probes go unanswered (Linux defaults: 9 probes 75 s apart after the delay).
   */
  connectionTimeoutMs?: number;
  /** Idle time before TCP keepalive probes start, so a silently dead connection is noticed and dropped. */
  keepAliveInitialDelayMs?: number;
  /**
   * How long a connection may sit unused in the pool before it is closed: pg's 10 s by default, which
   * lets a short program exit soon after its last query. Long-running roles use createRolePool.
   */
  idleTimeoutMs?: number;
}

/** Generous against a loaded machine (connects take milliseconds), short against a hung request. */
export const DEFAULT_CONNECTION_TIMEOUT_MS = 10_000;
export const DEFAULT_KEEPALIVE_INITIAL_DELAY_MS = 10_000;

/**
 * A long-running role's pool keeps idle connections this long: past the minute between the bursts
 * that every-minute schedules make. A new connection takes ~15 ms to open and its first claim ~20 ms
 * more than later ones (catalog caches); with pg's 10 s a burst reopened what the last one had opened,
 * and 5,000 jobs after 13 s idle took ~1.2× as long to run.
 */
const ROLE_IDLE_TIMEOUT_MS = 300_000;

// bigint (int8) columns come back as strings by default; job and occurrence ids stay far below 2^53,
// so reading them as numbers keeps every row type plain.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

/**
 * The settings every Tidemark connection starts with (docs/production.md, Connections).
 *
 * No JIT: our statements are short OLTP ones, but the planner's estimates for a 1,000-row claim
 * (fair share over an estimated 100 tenants) pass jit_above_cost, and compiling then costs more
 * than running: one claim of 1,000 spent 241 of its 332 ms compiling, and a drain ran about
 * twice as fast with JIT off. No parallel workers, for the same reason: a range bounded by a
 * value read in the statement is estimated at a third of the table, and the charts' backlog
 * read beside 10 million jobs started two workers to read none, taking 30 times as long.
 */
export const CONNECTION_OPTIONS = '-c jit=off -c max_parallel_workers_per_gather=0';

export function createPool(options: PoolOptions): Pool {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'tidemark',
    connectionTimeoutMillis: options.connectionTimeoutMs ?? DEFAULT_CONNECTION_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: options.keepAliveInitialDelayMs ?? DEFAULT_KEEPALIVE_INITIAL_DELAY_MS,
    ...(options.idleTimeoutMs === undefined ? {} : { idleTimeoutMillis: options.idleTimeoutMs }),
    options: CONNECTION_OPTIONS,
  });
  // An idle client losing its connection (server restart, network cut) must not crash the process;
  // the next query on the pool gets a fresh connection or a real error.
  pool.on('error', () => undefined);
  return withMovedRowRetry(pool);
}

/** The pool of a long-running role (worker, scheduler, API, …): idle connections kept 5 minutes. */
export function createRolePool(options: Omit<PoolOptions, 'idleTimeoutMs'>): Pool {
  return createPool({ ...options, idleTimeoutMs: ROLE_IDLE_TIMEOUT_MS });
}

const retryingPools = new WeakSet<pg.Pool>();

/**
 * Makes `pool.query` run a statement again when a job row moved under it (isMovedRow), once per
 * pool: Tidemark's own pools at creation, a pool an application hands in where Tidemark takes it
 * (Client, Worker, Scheduler, Maintenance). A statement on the pool runs in a transaction of its
 * own, so the one that failed changed nothing.
 */
export function withMovedRowRetry(pool: Pool): Pool {
  if (retryingPools.has(pool)) return pool;
  const run = pool.query.bind(pool) as (...args: QueryArgs) => Promise<pg.QueryResult>;
  const retrying = async (...args: QueryArgs): Promise<pg.QueryResult> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await run(...args);
      } catch (error) {
        if (attempt >= MOVED_ATTEMPTS || !isMovedRow(error)) throw error;
      }
    }
  };
  pool.query = retrying as unknown as pg.Pool['query'];
  retryingPools.add(pool);
  return pool;
}

type QueryArgs = [config: string | pg.QueryConfig, values?: unknown[]];

/**
 * A statement that waited for a job row's lock while another transaction moved the row to the other
 * partition (a job finishing, or a finished one run again) fails instead of reading the row again:
 * PostgreSQL cannot follow a row across partitions. Nothing was changed; run again, the statement
 * reads the row where it is now. A statement on the pool and a transaction (withTransaction) are run
 * again up to this many times in all.
 */
const MOVED_ATTEMPTS = 5;

export function isMovedRow(error: unknown): boolean {
  return (
    error instanceof Error &&
    (error as { code?: unknown }).code === '40001' &&
    error.message.includes('moved to another partition')
  );
}

/**
 * For a transaction whose statements look rows up by batches of ids (`byIndex`): the planner prices
 * each id of an `id = ANY (...)` as a random read, so for a few hundred ids in a jobs table of 20,000
 * rows, or one it last analysed nearly empty, it scanned the whole table: 3–12 ms a statement where
 * the primary key reads the batch in 0.2–1 ms.
 */
const BY_INDEX = 'SET LOCAL enable_seqscan = off';

/**
 * Runs `fn` in a transaction on one pooled connection; rolls back on any error and rethrows it.
 * `byIndex`: its statements read tables by index wherever one applies (BY_INDEX). A transaction that
 * met a job row moved under it (isMovedRow) runs again from the start, unless `runOnce`: `fn` runs a
 * caller's code, which must not run twice.
 */
export async function withTransaction<T>(
  pool: Pool,
  fn: (client: PoolClient) => Promise<T>,
  options: { byIndex?: boolean; runOnce?: boolean } = {},
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const client = await pool.connect();
    try {
      await client.query(options.byIndex === true ? `BEGIN; ${BY_INDEX}` : 'BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      if (options.runOnce === true || attempt >= MOVED_ATTEMPTS || !isMovedRow(error)) throw error;
    } finally {
      client.release();
    }
  }
}
