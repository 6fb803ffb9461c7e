/**
 * Enqueue: the statements that write new jobs, one at a time, many through `unnest` arrays, and large
 * batches of fresh jobs through COPY. A key already present in its queue keeps the existing job.
 */
import pg from 'pg';
import { COPY_CHUNK_ROWS, copyIn, copyInt, copyText } from './copy-text.ts';
import { jobsWake } from './channels.ts';
import {
  generatedKey,
  generatedKeyJobId,
  generatedKeySql,
  generatedKeySuffix,
  newKeySuffix,
  scheduleJobKeyParts,
  workflowJobKeyNodeId,
} from './job-key.ts';
import type { PoolClient, Queryable } from './pool.ts';

export interface JobInsert {
  queue: string;
  kind: string;
  tenantId: string;
  payload: unknown;
  /** `payload` already serialised (validateEnqueue does it once while checking it); else stringified here. */
  payloadJson?: string;
  priority: number;
  /** null: now, by the database's clock. */
  runAt: Date | null;
  /** null: the queue's setting, else 4. */
  maxAttempts: number | null;
  timeoutMs: number | null;
  heartbeatMs: number | null;
  backoffBaseMs: number | null;
  backoffMaxMs: number | null;
  /** null: none given, so one is generated from the job's id (store/job-key.ts). */
  idempotencyKey: string | null;
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
 * batch is large, due now and has no keys given; a key already present in its queue keeps the
 * existing job. Returns one entry per input, in input order.
 */
export async function jobInsertMany(db: Queryable, jobs: readonly JobInsert[]): Promise<JobInserted[]> {
  if (jobs.length === 0) return [];
  if (jobs.length >= COPY_MIN_ROWS && jobs.every((j) => j.idempotencyKey === null && j.runAt === null)) {
    return db instanceof pg.Pool ? withClient(db, (c) => copyInsert(c, jobs)) : copyInsert(db, jobs);
  }
  const byKey = await jobsOfGeneratedKeysSentBack(db, jobs);
  // The random parts of the keys to generate, one per job without a key.
  const suffixes = jobs.map((j) => (j.idempotencyKey === null ? newKeySuffix() : null));
  const toInsert = jobs.flatMap((j, i) =>
    j.idempotencyKey !== null && byKey.has(queueKey(j.queue, j.idempotencyKey)) ? [] : [i],
  );
  const inserted = await insertSome(
    db,
    toInsert.map((i) => jobs[i] as JobInsert),
    toInsert.map((i) => suffixes[i] ?? null),
  );
  const generated = new Map<string, InsertedRow>();
  const created = new Set<string>();
  for (const row of inserted.rows) {
    if (row.generated === true) {
      generated.set(generatedKeySuffix(row.key), row);
      continue;
    }
    const k = queueKey(row.queue, row.key);
    byKey.set(k, row.id);
    created.add(k);
  }
  const missing = jobs.filter(
    (j) => j.idempotencyKey !== null && !byKey.has(queueKey(j.queue, j.idempotencyKey)),
  );
  if (missing.length > 0) {
    const existing = await db.query<InsertedRow>(
      `SELECT k.job_id AS id, k.queue, k.key
       FROM unnest($1::text[], $2::text[]) AS i(queue, key)
       JOIN job_keys k ON k.queue = i.queue AND k.key = i.key`,
      [missing.map((j) => j.queue), missing.map((j) => j.idempotencyKey)],
    );
    for (const row of existing.rows) byKey.set(queueKey(row.queue, row.key), row.id);
  }
  const seen = new Set<string>();
  return jobs.map((j, i) => {
    if (j.idempotencyKey === null) {
      const row = generated.get(suffixes[i] ?? '');
      if (row === undefined) throw new Error(`job ${j.queue} with a generated key was not inserted`);
      return { id: row.id, queue: j.queue, idempotencyKey: row.key, created: true };
    }
    const k = queueKey(j.queue, j.idempotencyKey);
    const id = byKey.get(k);
    if (id === undefined) throw new Error(`job ${j.queue}/${j.idempotencyKey} neither inserted nor found`);
    // Two inputs with one key in one call: the first one created the row, the second found it.
    const isNew = created.has(k) && !seen.has(k);
    seen.add(k);
    return { id, queue: j.queue, idempotencyKey: j.idempotencyKey, created: isNew };
  });
}

/** The statement for this many rows: one job alone (on the pool, with its wake-up), or many. */
async function insertSome(
  db: Queryable,
  jobs: readonly JobInsert[],
  suffixes: readonly (string | null)[],
): Promise<{ rows: InsertedRow[] }> {
  const [one] = jobs;
  if (one === undefined) return { rows: [] };
  if (jobs.length > 1) return insertMany(db, jobs, suffixes);
  const suffix = suffixes[0] ?? null;
  return db instanceof pg.Pool ? insertOneThenWake(db, one, suffix) : insertOne(db, one, suffix, false);
}

/**
 * How jobs with a key of their own are told apart. Jobs with a generated key are found by its random
 * part instead: building this string and three hash lookups per job took ~0.25 s of Node time for
 * 50,000 jobs.
 */
function queueKey(queue: string, key: string | null): string {
  return `${queue}\u0000${key ?? ''}`;
}

/**
 * Jobs named by a key Tidemark made that a caller sent back as its own: a generated key
 * (`job-<id>-…`) names its job by id, a workflow node's (`workflow:…:<node id>:<run>`) the node's
 * current job, a schedule's (`occurrence:…`, `trigger:…`) its job through the ledger. Such keys are
 * not in job_keys, so they are found this way. A key of these forms that names no such job of the
 * queue (another queue, or an earlier run of a node) is an ordinary caller key from then on.
 */
async function jobsOfGeneratedKeysSentBack(
  db: Queryable,
  jobs: readonly JobInsert[],
): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  const ids: number[] = [];
  const nodeIds: number[] = [];
  const scheduleKeys: string[] = [];
  const fired: { scheduleId: string; fireAt: Date }[] = [];
  const triggered: string[] = [];
  for (const j of jobs) {
    if (j.idempotencyKey === null) continue;
    const id = generatedKeyJobId(j.idempotencyKey);
    if (id !== undefined) ids.push(id);
    const nodeId = workflowJobKeyNodeId(j.idempotencyKey);
    if (nodeId !== undefined) nodeIds.push(nodeId);
    const schedule = scheduleJobKeyParts(j.idempotencyKey);
    if (schedule === undefined) continue;
    scheduleKeys.push(j.idempotencyKey);
    if (schedule.fireAt === null) triggered.push(schedule.scheduleId);
    else fired.push({ scheduleId: schedule.scheduleId, fireAt: schedule.fireAt });
  }
  if (ids.length === 0 && nodeIds.length === 0 && scheduleKeys.length === 0) return found;
  const { rows } = await db.query<InsertedRow>(
    `SELECT id, queue, idempotency_key AS key FROM jobs
     WHERE key_generated
       AND (id = ANY ($1::bigint[]) OR id IN (SELECT job_id FROM workflow_nodes WHERE id = ANY ($2::bigint[])))
     UNION ALL
     SELECT j.id, j.queue, j.idempotency_key FROM occurrences o JOIN jobs j ON j.id = o.job_id
     WHERE j.idempotency_key = ANY ($3::text[])
       AND ((o.source = 'schedule'
             AND (o.schedule_id, o.fire_at) IN (SELECT * FROM unnest($4::uuid[], $5::timestamptz[])))
            OR (o.source = 'trigger' AND o.schedule_id = ANY ($6::uuid[])))`,
    [ids, nodeIds, scheduleKeys, fired.map((f) => f.scheduleId), fired.map((f) => f.fireAt), triggered],
  );
  for (const row of rows) found.set(queueKey(row.queue, row.key), row.id);
  return found;
}

const INSERT_COLUMNS = `queue, kind, tenant_id, payload, priority, state, run_at, max_attempts, timeout_ms,
  heartbeat_ms, backoff_base_ms, backoff_max_ms, idempotency_key`;

interface InsertedRow {
  id: number;
  queue: string;
  key: string;
  /** The key was generated by the insert (found by its random part, not by queue and key). */
  generated?: boolean;
}

/**
 * One job, with scalar parameters: the many-row statement would encode, send and unnest twelve
 * one-element arrays for it. One round trip either way. The id is drawn in the statement so that a
 * key to generate ($13 its random part, when $12 is null) can be made from it.
 */
async function insertOne(
  db: Queryable,
  j: JobInsert,
  suffix: string | null,
  wakeAfterCommit: boolean,
): Promise<pg.QueryResult<InsertedRow & { available: boolean }>> {
  return db.query<InsertedRow & { available: boolean }>({
    // Prepared once per connection: a single enqueue then skips parse and plan.
    name: wakeAfterCommit ? 'tidemark_job_insert_one_quiet' : 'tidemark_job_insert_one',
    // A key given is claimed in job_keys first; the job is written only when the claim was this one's.
    text: `WITH s AS (SELECT nextval('jobs_id_seq') AS id),
     k AS (
       INSERT INTO job_keys (queue, key, job_id) SELECT $1::text, $12::text, s.id FROM s WHERE $12::text IS NOT NULL
       ON CONFLICT DO NOTHING
       RETURNING job_id
     )
     INSERT INTO jobs (id, ${INSERT_COLUMNS}, key_generated)
     SELECT s.id, $1::text, $2::text, $3::text, $4::jsonb, $5::int,
            CASE WHEN $6::timestamptz > now() THEN 'scheduled' ELSE 'available' END,
            coalesce($6::timestamptz, now()),
            coalesce($7::int, (SELECT q.max_attempts FROM queues q WHERE q.name = $1), 4),
            $8::int, $9::int, $10::int, $11::int,
            coalesce($12::text, ${generatedKeySql('s.id', '$13::text')}), $12::text IS NULL
     FROM s
     WHERE ($12::text IS NULL OR EXISTS (SELECT FROM k)) ${wakeAfterCommit ? QUIET_TRIGGER : ''}
     RETURNING id, queue, idempotency_key AS key, key_generated AS generated, state = 'available' AS available`,
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
      suffix,
    ],
  });
}

/**
 * Tells the insert trigger (0017) that this statement's caller sends the wake-up itself, after the
 * commit. Transaction-local: it ends with the statement's own transaction.
 */
const QUIET_TRIGGER = `AND set_config('tidemark.wake', 'after_commit', true) IS NOT NULL`;

/** Lone enqueues of this process on the pool whose insert is in flight (insertOneThenWake). */
let loneInFlight = 0;

/**
 * One job on the pool, in its own transaction. Beside other such enqueues of this process, its
 * wake-up is sent after the commit by a statement of its own: a NOTIFY inside the inserting
 * transaction holds PostgreSQL's one lock for notifying commits until the commit is flushed, so
 * every enqueue that notifies waits for every other's flush (16 connections enqueueing one job at a
 * time: about a third of the rate with the NOTIFY in the insert); the wake-up alone writes nothing
 * and holds that lock for no flush. Alone, nothing of ours can wait on that lock, and the trigger's
 * NOTIFY in the insert's own commit saves the second statement (one caller enqueueing in a loop:
 * about 10 % more enqueues/s).
 */
async function insertOneThenWake(
  pool: pg.Pool,
  j: JobInsert,
  suffix: string | null,
): Promise<pg.QueryResult<InsertedRow & { available: boolean }>> {
  const alone = loneInFlight === 0;
  loneInFlight++;
  let result: pg.QueryResult<InsertedRow & { available: boolean }>;
  try {
    result = await insertOne(pool, j, suffix, !alone);
  } finally {
    loneInFlight--;
  }
  const row = result.rows[0];
  // Not awaited: the job is committed and the caller need not wait a round trip more for its
  // workers to hear of it. A wake-up that fails leaves the job to the workers' poll.
  if (!alone && row?.available === true) void jobsWake(pool, `${row.queue} ${row.id}`).catch(() => undefined);
  return result;
}

/**
 * The SELECT that turns twelve parallel arrays, from parameter $`from` on, into rows for jobs (id,
 * INSERT_COLUMNS, key_generated), each with an id drawn for it. `generated`: the key array holds the
 * random parts of keys to generate from the ids; else the keys given.
 */
function unnestRows(from: number, generated: boolean): string {
  const p = (n: number): string => `$${from + n}`;
  return `SELECT i.id, i.queue, i.kind, i.tenant_id, i.payload, i.priority,
            CASE WHEN i.run_at > now() THEN 'scheduled' ELSE 'available' END AS state,
            coalesce(i.run_at, now()) AS run_at,
            coalesce(i.max_attempts, q.max_attempts, 4) AS max_attempts,
            i.timeout_ms, i.heartbeat_ms, i.backoff_base_ms, i.backoff_max_ms,
            ${generated ? `${generatedKeySql('i.id', 'i.key')}` : 'i.key'} AS idempotency_key,
            ${generated} AS key_generated
     FROM (SELECT nextval('jobs_id_seq') AS id, *
           FROM unnest(${p(0)}::text[], ${p(1)}::text[], ${p(2)}::text[], ${p(3)}::jsonb[], ${p(4)}::int[],
                       ${p(5)}::timestamptz[], ${p(6)}::int[], ${p(7)}::int[], ${p(8)}::int[], ${p(9)}::int[],
                       ${p(10)}::int[], ${p(11)}::text[])
                AS u(queue, kind, tenant_id, payload, priority, run_at, max_attempts, timeout_ms, heartbeat_ms,
                     backoff_base_ms, backoff_max_ms, key)
           -- A fence: the id drawn here is read twice above (the id and the key), so it must be
           -- drawn once per row, not once per reference.
           OFFSET 0) i
          -- A join, not a subquery per row: 50,000 lookups of the same queue cost ~100 ms.
          LEFT JOIN queues q ON q.name = i.queue`;
}

/** The arrays unnestRows reads; `keys` holds the keys given or the random parts of keys to generate. */
function columnArrays(jobs: readonly JobInsert[], keys: readonly (string | null)[]): unknown[] {
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
    keys,
  ];
}

/**
 * Many jobs in one statement: parallel arrays through `unnest`, in two inserts. Jobs whose key is
 * generated here can not clash, so they skip ON CONFLICT's speculative insertion (an extra probe of
 * the key index and a confirm per row), which cost a third more PostgreSQL CPU on 50,000 rows
 * (time-ordered keys). `suffixes[i]` is the random
 * part of the key to generate for jobs[i], null when it has a key of its own.
 */
async function insertMany(
  db: Queryable,
  jobs: readonly JobInsert[],
  suffixes: readonly (string | null)[],
): Promise<pg.QueryResult<InsertedRow>> {
  const fresh = jobs.filter((j) => j.idempotencyKey === null);
  const keyed = fresh.length === 0 ? jobs : jobs.filter((j) => j.idempotencyKey !== null);
  return db.query<InsertedRow>({
    name: 'tidemark_job_insert_many',
    text: `WITH fresh AS (
       INSERT INTO jobs (id, ${INSERT_COLUMNS}, key_generated)
       ${unnestRows(1, true)}
       RETURNING id, queue, idempotency_key AS key
     ),
     given AS (${unnestRows(13, false)}),
     -- Each key given is claimed in job_keys; a job is written where the claim was this row's (the
     -- first of two rows with one key, and none whose key another job holds).
     claimed AS (
       INSERT INTO job_keys (queue, key, job_id) SELECT queue, idempotency_key, id FROM given
       ON CONFLICT DO NOTHING
       RETURNING job_id
     ),
     keyed AS (
       INSERT INTO jobs (id, ${INSERT_COLUMNS}, key_generated)
       SELECT * FROM given WHERE id IN (SELECT job_id FROM claimed)
       RETURNING id, queue, idempotency_key AS key
     )
     SELECT id, queue, key, true AS generated FROM fresh UNION ALL SELECT id, queue, key, false FROM keyed`,
    values: [
      ...columnArrays(
        fresh,
        suffixes.filter((x) => x !== null),
      ),
      ...columnArrays(
        keyed,
        keyed.map((j) => j.idempotencyKey),
      ),
    ],
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
 * A large batch of jobs due now without keys of their own (so none can clash) with one COPY, after
 * drawing their ids from the jobs' sequence: COPY returns nothing, so the ids (and the keys made from
 * them) must be known before. Without a transaction of the caller's, the COPY commits on its own, all or nothing;
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
  const keys = Array.from(ids, (id) => generatedKey(id, newKeySuffix()));
  await copyIn(
    db,
    `jobs (id, queue, kind, tenant_id, payload, priority, max_attempts, timeout_ms, heartbeat_ms,
           backoff_base_ms, backoff_max_ms, idempotency_key, key_generated)`,
    copyJobRows(jobs, ids, keys, queueAttempts),
  );
  return jobs.map((j, i) => ({
    id: ids[i] as number,
    queue: j.queue,
    idempotencyKey: keys[i] as string,
    created: true,
  }));
}

/** COPY text rows of jobs due now: state and run_at take their defaults ('available', now()). */
function* copyJobRows(
  jobs: readonly JobInsert[],
  ids: Float64Array,
  keys: readonly string[],
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
      `${copyInt(j.backoffMaxMs)}\t${keys[i]}\tt\n`;
    if ((i + 1) % COPY_CHUNK_ROWS === 0) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk !== '') yield chunk;
}
