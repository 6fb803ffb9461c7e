/**
 * Enqueue: the statements that write new jobs, one at a time, many through `unnest` arrays, and large
 * batches of fresh jobs through COPY. A key already present in its queue keeps the existing job.
 */
import pg from 'pg';
import { COPY_CHUNK_ROWS, copyIn, copyInt, copyText } from './copy-text.ts';
import { jobsWake } from './channels.ts';
import type { PoolClient, Queryable } from './pool.ts';

export interface JobInsert {
  queue: string;
  kind: string;
  tenantId: string;
  payload: unknown;
  /** `payload` already serialised (validateEnqueue does it once while checking it); else stringified here. */
  payloadJson?: string;
  /** true: the key was made for this enqueue (newJobKey), not given by the caller, so no job has it yet. */
  keyGenerated?: boolean;
  priority: number;
  /** null: now, by the database's clock. */
  runAt: Date | null;
  /** null: the queue's setting, else 4. */
  maxAttempts: number | null;
  timeoutMs: number | null;
  heartbeatMs: number | null;
  backoffBaseMs: number | null;
  backoffMaxMs: number | null;
  idempotencyKey: string;
}

export interface JobInserted {
  id: number;
  queue: string;
  idempotencyKey: string;
  /** false when a job with this key already existed in the queue: that job is returned instead. */
  created: boolean;
}

/**
 * Inserts many jobs in one statement (parallel arrays through `unnest`), or with one COPY when the
 * batch is large, due now and has only generated keys; a key already present in its queue keeps the
 * existing job. Returns one entry per input, in input order.
 */
export async function jobInsertMany(db: Queryable, jobs: readonly JobInsert[]): Promise<JobInserted[]> {
  const [only] = jobs;
  if (only === undefined) return [];
  if (jobs.length >= COPY_MIN_ROWS && jobs.every((j) => j.keyGenerated === true && j.runAt === null)) {
    return db instanceof pg.Pool ? withClient(db, (c) => copyInsert(c, jobs)) : copyInsert(db, jobs);
  }
  const inserted =
    jobs.length === 1
      ? db instanceof pg.Pool
        ? await insertOneThenWake(db, only)
        : await insertOne(db, only, false)
      : await insertMany(db, jobs);
  // Generated keys are unique by themselves, so their rows are found by key alone; the others by
  // (queue, key), with duplicates and keys already present to resolve. (Building a composite string
  // and three hash lookups per job took ~0.25 s of Node time for 50,000 jobs.)
  const fresh = new Map<string, number>();
  const byKey = new Map<string, number>();
  const created = new Set<string>();
  for (const row of inserted.rows) {
    if (row.fresh === true) {
      fresh.set(row.key, row.id);
      continue;
    }
    const k = `${row.queue}\u0000${row.key}`;
    byKey.set(k, row.id);
    created.add(k);
  }
  const keyed = fresh.size === jobs.length ? [] : jobs.filter((j) => j.keyGenerated !== true);
  const missing = keyed.filter((j) => !byKey.has(`${j.queue}\u0000${j.idempotencyKey}`));
  if (missing.length > 0) {
    const existing = await db.query<InsertedRow>(
      `SELECT j.id, j.queue, j.idempotency_key AS key
       FROM unnest($1::text[], $2::text[]) AS i(queue, key)
       JOIN jobs j ON j.queue = i.queue AND j.idempotency_key = i.key`,
      [missing.map((j) => j.queue), missing.map((j) => j.idempotencyKey)],
    );
    for (const row of existing.rows) byKey.set(`${row.queue}\u0000${row.key}`, row.id);
  }
  const seen = new Set<string>();
  return jobs.map((j) => {
    if (j.keyGenerated === true) {
      const id = fresh.get(j.idempotencyKey);
      if (id !== undefined) return { id, queue: j.queue, idempotencyKey: j.idempotencyKey, created: true };
    }
    const k = `${j.queue}\u0000${j.idempotencyKey}`;
    const id = byKey.get(k);
    if (id === undefined) throw new Error(`job ${j.queue}/${j.idempotencyKey} neither inserted nor found`);
    // Two inputs with one key in one call: the first one created the row, the second found it.
    const isNew = created.has(k) && !seen.has(k);
    seen.add(k);
    return { id, queue: j.queue, idempotencyKey: j.idempotencyKey, created: isNew };
  });
}

const INSERT_COLUMNS = `queue, kind, tenant_id, payload, priority, state, run_at, max_attempts, timeout_ms,
  heartbeat_ms, backoff_base_ms, backoff_max_ms, idempotency_key`;

interface InsertedRow {
  id: number;
  queue: string;
  key: string;
  /** Inserted by the insert of generated keys (insertMany only). */
  fresh?: boolean;
}

/**
 * One job, with scalar parameters: the many-row statement would encode, send and unnest twelve
 * one-element arrays for it. One round trip either way.
 */
async function insertOne(
  db: Queryable,
  j: JobInsert,
  wakeAfterCommit: boolean,
): Promise<pg.QueryResult<InsertedRow & { available: boolean }>> {
  return db.query<InsertedRow & { available: boolean }>({
    // Prepared once per connection: a single enqueue then skips parse and plan.
    name: wakeAfterCommit ? 'tidemark_job_insert_one_quiet' : 'tidemark_job_insert_one',
    text: `INSERT INTO jobs (${INSERT_COLUMNS})
     SELECT $1::text, $2::text, $3::text, $4::jsonb, $5::int,
            CASE WHEN $6::timestamptz > now() THEN 'scheduled' ELSE 'available' END,
            coalesce($6::timestamptz, now()),
            coalesce($7::int, (SELECT q.max_attempts FROM queues q WHERE q.name = $1), 4),
            $8::int, $9::int, $10::int, $11::int, $12::text
     ${wakeAfterCommit ? QUIET_TRIGGER : ''}
     ON CONFLICT (queue, idempotency_key) DO NOTHING
     RETURNING id, queue, idempotency_key AS key, state = 'available' AS available`,
    values: [
      j.queue,
      j.kind,
      j.tenantId,
      j.payloadJson ?? JSON.stringify(j.payload ?? null),
      j.priority,
      j.runAt,
      j.maxAttempts,
      j.timeoutMs,
      j.heartbeatMs,
      j.backoffBaseMs,
      j.backoffMaxMs,
      j.idempotencyKey,
    ],
  });
}

/**
 * Tells the insert trigger (0017) that this statement's caller sends the wake-up itself, after the
 * commit. Transaction-local: it ends with the statement's own transaction.
 */
const QUIET_TRIGGER = `WHERE set_config('tidemark.wake', 'after_commit', true) IS NOT NULL`;

/**
 * One job on the pool: its own transaction, and its wake-up sent after that commits, by a statement
 * of its own. A NOTIFY inside the inserting transaction holds PostgreSQL's one lock for notifying
 * commits until the commit is flushed, so every enqueue that notifies waits for every other's flush
 * (16 connections enqueueing one job at a time: 1,264/1,584 enqueues/s with the NOTIFY in the
 * insert, 4,113/5,411 without). The wake-up alone writes nothing and holds that lock for no flush.
 */
async function insertOneThenWake(
  pool: pg.Pool,
  j: JobInsert,
): Promise<pg.QueryResult<InsertedRow & { available: boolean }>> {
  const result = await insertOne(pool, j, true);
  const row = result.rows[0];
  // Not awaited: the job is committed and the caller need not wait a round trip more for its
  // workers to hear of it. A wake-up that fails leaves the job to the workers' poll.
  if (row?.available === true) void jobsWake(pool, `${row.queue} ${row.id}`).catch(() => undefined);
  return result;
}

/** The SELECT that turns twelve parallel arrays, from parameter $`from` on, into rows for jobs. */
function unnestRows(from: number): string {
  const p = (n: number): string => `$${from + n}`;
  return `SELECT i.queue, i.kind, i.tenant_id, i.payload, i.priority,
            CASE WHEN i.run_at > now() THEN 'scheduled' ELSE 'available' END,
            coalesce(i.run_at, now()),
            coalesce(i.max_attempts, q.max_attempts, 4),
            i.timeout_ms, i.heartbeat_ms, i.backoff_base_ms, i.backoff_max_ms, i.key
     FROM unnest(${p(0)}::text[], ${p(1)}::text[], ${p(2)}::text[], ${p(3)}::jsonb[], ${p(4)}::int[],
                 ${p(5)}::timestamptz[], ${p(6)}::int[], ${p(7)}::int[], ${p(8)}::int[], ${p(9)}::int[],
                 ${p(10)}::int[], ${p(11)}::text[])
          AS i(queue, kind, tenant_id, payload, priority, run_at, max_attempts, timeout_ms, heartbeat_ms,
               backoff_base_ms, backoff_max_ms, key)
          -- A join, not a subquery per row: 50,000 lookups of the same queue cost ~100 ms.
          LEFT JOIN queues q ON q.name = i.queue`;
}

function columnArrays(jobs: readonly JobInsert[]): unknown[] {
  return [
    jobs.map((j) => j.queue),
    jobs.map((j) => j.kind),
    jobs.map((j) => j.tenantId),
    jobs.map((j) => j.payloadJson ?? JSON.stringify(j.payload ?? null)),
    jobs.map((j) => j.priority),
    jobs.map((j) => j.runAt),
    jobs.map((j) => j.maxAttempts),
    jobs.map((j) => j.timeoutMs),
    jobs.map((j) => j.heartbeatMs),
    jobs.map((j) => j.backoffBaseMs),
    jobs.map((j) => j.backoffMaxMs),
    jobs.map((j) => j.idempotencyKey),
  ];
}

/**
 * Many jobs in one statement: parallel arrays through `unnest`, in two inserts. Jobs whose key was
 * made for this enqueue (`keyGenerated`) can not clash, so they skip ON CONFLICT's speculative
 * insertion (an extra probe of the key index and a confirm per row): 50,000 rows took 1,210 ms of
 * PostgreSQL CPU against 1,630–1,850 ms with ON CONFLICT (time-ordered keys, alternating runs).
 */
async function insertMany(db: Queryable, jobs: readonly JobInsert[]): Promise<pg.QueryResult<InsertedRow>> {
  const fresh = jobs.filter((j) => j.keyGenerated === true);
  const keyed = fresh.length === 0 ? jobs : jobs.filter((j) => j.keyGenerated !== true);
  return db.query<InsertedRow>({
    name: 'tidemark_job_insert_many',
    text: `WITH fresh AS (
       INSERT INTO jobs (${INSERT_COLUMNS})
       ${unnestRows(1)}
       RETURNING id, queue, idempotency_key AS key
     ),
     keyed AS (
       INSERT INTO jobs (${INSERT_COLUMNS})
       ${unnestRows(13)}
       ON CONFLICT (queue, idempotency_key) DO NOTHING
       RETURNING id, queue, idempotency_key AS key
     )
     SELECT id, queue, key, true AS fresh FROM fresh UNION ALL SELECT id, queue, key, false FROM keyed`,
    values: [...columnArrays(fresh), ...columnArrays(keyed)],
  });
}

/**
 * From this many rows a batch that qualifies goes through COPY: it costs a round trip more (the ids
 * are drawn first) and pays off long before this.
 */
const COPY_MIN_ROWS = 500;

async function withClient<T>(pool: pg.Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    return await fn(client);
  } finally {
    client.release();
  }
}

interface IdRange {
  lo: number;
  hi: number;
}

/**
 * A large batch of jobs due now whose keys were made for this enqueue (so none can clash) with one
 * COPY, after drawing their ids from the jobs' sequence: COPY returns nothing, so the ids must be
 * known before. Without a transaction of the caller's, the COPY commits on its own, all or nothing;
 * ids drawn for a COPY that then fails are skipped, as any rolled-back insert's are.
 *
 * Measured with 50,000 jobs on a fresh database (quiet machine): the `unnest` INSERT took 1,650 ms
 * (the server parsed twelve 50,000-element arrays whole and inserted row by row, and the client parsed
 * 50,000 returned rows), this 610-730 ms including 160-240 ms of validation in the client.
 */
async function copyInsert(db: Pick<PoolClient, 'query'>, jobs: readonly JobInsert[]): Promise<JobInserted[]> {
  // nextval one row at a time, returned as runs of consecutive values: one row when no other
  // session drew ids meanwhile. The queues' max_attempts stand in for the INSERT's join.
  const { rows } = await db.query<IdRange & { queues: Record<string, number> | null }>(
    `SELECT min(v) AS lo, max(v) AS hi,
            (SELECT json_object_agg(name, max_attempts) FROM queues
             WHERE name = ANY ($2::text[]) AND max_attempts IS NOT NULL) AS queues
     FROM (SELECT v, v - row_number() OVER (ORDER BY v) AS run
           FROM (SELECT nextval('jobs_id_seq') AS v FROM generate_series(1, $1::int)) s) t
     GROUP BY run ORDER BY lo`,
    [jobs.length, [...new Set(jobs.map((j) => j.queue))]],
  );
  const ids = new Float64Array(jobs.length);
  let n = 0;
  for (const r of rows) for (let id = r.lo; id <= r.hi; id++) ids[n++] = id;
  const queueAttempts = rows[0]?.queues ?? {};
  await copyIn(
    db,
    `jobs (id, queue, kind, tenant_id, payload, priority, max_attempts, timeout_ms, heartbeat_ms,
           backoff_base_ms, backoff_max_ms, idempotency_key)`,
    copyJobRows(jobs, ids, queueAttempts),
  );
  return jobs.map((j, i) => ({
    id: ids[i] as number,
    queue: j.queue,
    idempotencyKey: j.idempotencyKey,
    created: true,
  }));
}

/** COPY text rows of jobs due now: state and run_at take their defaults ('available', now()). */
function* copyJobRows(
  jobs: readonly JobInsert[],
  ids: Float64Array,
  queueAttempts: Record<string, number>,
): Generator<string> {
  let chunk = '';
  for (let i = 0; i < jobs.length; i++) {
    const j = jobs[i] as JobInsert;
    const payload = j.payloadJson ?? JSON.stringify(j.payload ?? null);
    const attempts = j.maxAttempts ?? queueAttempts[j.queue] ?? 4;
    chunk +=
      `${ids[i]}\t${copyText(j.queue)}\t${copyText(j.kind)}\t${copyText(j.tenantId)}\t${copyText(payload)}\t${j.priority}\t` +
      `${attempts}\t${copyInt(j.timeoutMs)}\t${copyInt(j.heartbeatMs)}\t${copyInt(j.backoffBaseMs)}\t` +
      `${copyInt(j.backoffMaxMs)}\t${copyText(j.idempotencyKey)}\n`;
    if ((i + 1) % COPY_CHUNK_ROWS === 0) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk !== '') yield chunk;
}
