/** Queue settings (the queues table of 0001_core.sql) for the admin API: limits and retry defaults. */
import type { Queryable } from './pool.ts';

export interface QueueRow {
  name: string;
  max_running: number | null;
  max_attempts: number;
  backoff_base_ms: number;
  backoff_max_ms: number;
  timeout_ms: number | null;
  created_at: Date;
  updated_at: Date;
}

export interface QueueSettings {
  maxRunning: number | null;
  maxAttempts: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  timeoutMs: number | null;
}

const COLUMNS =
  'name, max_running, max_attempts, backoff_base_ms, backoff_max_ms, timeout_ms, created_at, updated_at';

export async function queueGet(db: Queryable, name: string): Promise<QueueRow | undefined> {
  const { rows } = await db.query<QueueRow>(`SELECT ${COLUMNS} FROM queues WHERE name = $1`, [name]);
  return rows[0];
}

export async function queueList(db: Queryable): Promise<QueueRow[]> {
  const { rows } = await db.query<QueueRow>(`SELECT ${COLUMNS} FROM queues ORDER BY name`);
  return rows;
}

/** Writes every setting of the queue, creating its row if it had none. */
export async function queueUpsert(
  db: Queryable,
  name: string,
  s: QueueSettings,
): Promise<{ row: QueueRow; created: boolean }> {
  const { rows } = await db.query<QueueRow & { created: boolean }>(
    `INSERT INTO queues (name, max_running, max_attempts, backoff_base_ms, backoff_max_ms, timeout_ms)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (name) DO UPDATE SET
       max_running = EXCLUDED.max_running, max_attempts = EXCLUDED.max_attempts,
       backoff_base_ms = EXCLUDED.backoff_base_ms, backoff_max_ms = EXCLUDED.backoff_max_ms,
       timeout_ms = EXCLUDED.timeout_ms, updated_at = now()
     RETURNING ${COLUMNS}, (xmax = 0) AS created`,
    [name, s.maxRunning, s.maxAttempts, s.backoffBaseMs, s.backoffMaxMs, s.timeoutMs],
  );
  const row = rows[0];
  if (row === undefined) throw new Error('queueUpsert: INSERT … RETURNING returned no row');
  const { created, ...rest } = row;
  return { row: rest, created };
}
