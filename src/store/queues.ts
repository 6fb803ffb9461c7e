/** Named statements on `queues`: the cluster-wide settings of a job class. */
import type { Queryable } from './pool.ts';

export interface QueueSettings {
  /** Cluster-wide cap on running jobs of this queue; null: none. */
  maxRunning: number | null;
  maxAttempts: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  timeoutMs: number | null;
}

export interface QueueRow extends QueueSettings {
  name: string;
  /** Set while the queue is paused: every claim skips it. */
  pausedAt: Date | null;
  pausedBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

const COLUMNS = `name, max_running AS "maxRunning", max_attempts AS "maxAttempts",
  backoff_base_ms AS "backoffBaseMs", backoff_max_ms AS "backoffMaxMs", timeout_ms AS "timeoutMs",
  paused_at AS "pausedAt", paused_by AS "pausedBy", created_at AS "createdAt", updated_at AS "updatedAt"`;

/**
 * Creates the queue or changes the settings given; a setting left undefined keeps its stored value
 * (or the column default for a new queue). `null` clears an optional one. `created` tells which.
 */
export async function queueUpsert(
  db: Queryable,
  name: string,
  settings: Partial<QueueSettings>,
): Promise<{ row: QueueRow; created: boolean }> {
  const has = (k: keyof QueueSettings): boolean => settings[k] !== undefined;
  const result = await db.query<QueueRow & { created: boolean }>(
    `INSERT INTO queues (name, max_running, max_attempts, backoff_base_ms, backoff_max_ms, timeout_ms)
     VALUES ($1, $3, coalesce($5, 4), coalesce($7, 1000), coalesce($9, 3600000), $11)
     ON CONFLICT (name) DO UPDATE SET
       max_running = CASE WHEN $2 THEN EXCLUDED.max_running ELSE queues.max_running END,
       max_attempts = CASE WHEN $4 THEN EXCLUDED.max_attempts ELSE queues.max_attempts END,
       backoff_base_ms = CASE WHEN $6 THEN EXCLUDED.backoff_base_ms ELSE queues.backoff_base_ms END,
       backoff_max_ms = CASE WHEN $8 THEN EXCLUDED.backoff_max_ms ELSE queues.backoff_max_ms END,
       timeout_ms = CASE WHEN $10 THEN EXCLUDED.timeout_ms ELSE queues.timeout_ms END,
       updated_at = now()
     RETURNING ${COLUMNS}, (xmax = 0) AS created`,
    [
      name,
      has('maxRunning'),
      settings.maxRunning ?? null,
      has('maxAttempts'),
      settings.maxAttempts ?? null,
      has('backoffBaseMs'),
      settings.backoffBaseMs ?? null,
      has('backoffMaxMs'),
      settings.backoffMaxMs ?? null,
      has('timeoutMs'),
      settings.timeoutMs ?? null,
    ],
  );
  const row = result.rows[0];
  if (row === undefined) throw new Error(`queue ${name}: upsert returned no row`);
  const { created, ...rest } = row;
  return { row: rest, created };
}

export async function queueGet(db: Queryable, name: string): Promise<QueueRow | undefined> {
  const result = await db.query<QueueRow>(`SELECT ${COLUMNS} FROM queues WHERE name = $1`, [name]);
  return result.rows[0];
}

/**
 * The queue's row, created with the column defaults if it has none, locked until the caller's
 * transaction ends: a change and its audit row then describe the same before and after.
 */
export async function queueLock(db: Queryable, name: string): Promise<QueueRow> {
  await db.query(`INSERT INTO queues (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, [name]);
  const result = await db.query<QueueRow>(`SELECT ${COLUMNS} FROM queues WHERE name = $1 FOR UPDATE`, [name]);
  const row = result.rows[0];
  if (row === undefined) throw new Error(`queue ${name}: lock found no row`);
  return row;
}

/** Pauses the queue (`by` who did it), or resumes it (`by` null). */
export async function queuePausedSet(db: Queryable, name: string, by: string | null): Promise<QueueRow> {
  const result = await db.query<QueueRow>(
    `UPDATE queues SET paused_at = CASE WHEN $2::text IS NULL THEN NULL ELSE now() END, paused_by = $2,
            updated_at = now()
      WHERE name = $1 RETURNING ${COLUMNS}`,
    [name, by],
  );
  const row = result.rows[0];
  if (row === undefined) throw new Error(`queue ${name}: no row to pause or resume`);
  return row;
}

export async function queueList(db: Queryable): Promise<QueueRow[]> {
  const result = await db.query<QueueRow>(`SELECT ${COLUMNS} FROM queues ORDER BY name`);
  return result.rows;
}
