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
}

// bigint (int8) columns come back as strings by default; job and occurrence ids stay far below 2^53,
// so reading them as numbers keeps every row type plain.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export function createPool(options: PoolOptions): Pool {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'tidemark',
  });
  // An idle client losing its connection (server restart, network cut) must not crash the process;
  // the next query on the pool gets a fresh connection or a real error.
  pool.on('error', () => undefined);
  return pool;
}

/** Runs `fn` in a transaction on one pooled connection; rolls back on any error and rethrows it. */
export async function withTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
