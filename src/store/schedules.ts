/**
 * Schedules: named statements on the `schedules` table. Every edit bumps `version` (the
 * 0002_scheduler.sql trigger then NOTIFYs the leader); the leader's own advance of next_fire_at goes
 * through occurrenceMaterialise and leaves the version alone.
 */
import type { Queryable } from './pool.ts';

export interface ScheduleRow {
  id: string;
  tenantId: string;
  name: string;
  spec: string;
  timeZone: string;
  dstGap: 'shift' | 'skip';
  dstOverlap: 'first' | 'both' | null;
  misfirePolicy: 'all' | 'latest' | 'skip';
  misfireCap: number;
  startingDeadlineMs: number | null;
  overlapPolicy: 'allow' | 'forbid' | 'replace' | 'buffer_one';
  jitterMs: number;
  anchorAt: Date;
  queue: string;
  kind: string;
  payload: unknown;
  priority: number;
  maxAttempts: number | null;
  timeoutMs: number | null;
  paused: boolean;
  version: number;
  nextFireAt: Date | null;
  lastFireAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  /** Why the leader took this schedule out of the due set (its spec no longer compiles); cleared by an edit. */
  specError: string | null;
}

/** The editable fields, as written; id, version and timestamps are the store's. */
export type ScheduleFields = Omit<
  ScheduleRow,
  'id' | 'version' | 'lastFireAt' | 'createdAt' | 'updatedAt' | 'specError'
>;

interface Row {
  id: string;
  tenant_id: string;
  name: string;
  spec: string;
  time_zone: string;
  dst_gap: ScheduleRow['dstGap'];
  dst_overlap: ScheduleRow['dstOverlap'];
  misfire_policy: ScheduleRow['misfirePolicy'];
  misfire_cap: number;
  starting_deadline_ms: number | null;
  overlap_policy: ScheduleRow['overlapPolicy'];
  jitter_ms: number;
  anchor_at: Date;
  queue: string;
  kind: string;
  payload: unknown;
  priority: number;
  max_attempts: number | null;
  timeout_ms: number | null;
  paused: boolean;
  version: number;
  next_fire_at: Date | null;
  last_fire_at: Date | null;
  created_at: Date;
  updated_at: Date;
  spec_error: string | null;
}

const COLUMNS = `id, tenant_id, name, spec, time_zone, dst_gap, dst_overlap, misfire_policy, misfire_cap,
  starting_deadline_ms, overlap_policy, jitter_ms, anchor_at, queue, kind, payload, priority, max_attempts,
  timeout_ms, paused, version, next_fire_at, last_fire_at, created_at, updated_at, spec_error`;

function fromRow(r: Row): ScheduleRow {
  return {
    id: r.id,
    tenantId: r.tenant_id,
    name: r.name,
    spec: r.spec,
    timeZone: r.time_zone,
    dstGap: r.dst_gap,
    dstOverlap: r.dst_overlap,
    misfirePolicy: r.misfire_policy,
    misfireCap: r.misfire_cap,
    startingDeadlineMs: r.starting_deadline_ms,
    overlapPolicy: r.overlap_policy,
    jitterMs: r.jitter_ms,
    anchorAt: r.anchor_at,
    queue: r.queue,
    kind: r.kind,
    payload: r.payload,
    priority: r.priority,
    maxAttempts: r.max_attempts,
    timeoutMs: r.timeout_ms,
    paused: r.paused,
    version: r.version,
    nextFireAt: r.next_fire_at,
    lastFireAt: r.last_fire_at,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    specError: r.spec_error,
  };
}

function fieldValues(f: ScheduleFields): unknown[] {
  return [
    f.tenantId,
    f.name,
    f.spec,
    f.timeZone,
    f.dstGap,
    f.dstOverlap,
    f.misfirePolicy,
    f.misfireCap,
    f.startingDeadlineMs,
    f.overlapPolicy,
    f.jitterMs,
    f.anchorAt,
    f.queue,
    f.kind,
    JSON.stringify(f.payload ?? {}),
    f.priority,
    f.maxAttempts,
    f.timeoutMs,
    f.paused,
    f.nextFireAt,
  ];
}

export async function scheduleInsert(db: Queryable, fields: ScheduleFields): Promise<ScheduleRow> {
  const { rows } = await db.query<Row>({
    name: 'scheduleInsert',
    text: `INSERT INTO schedules (tenant_id, name, spec, time_zone, dst_gap, dst_overlap, misfire_policy,
             misfire_cap, starting_deadline_ms, overlap_policy, jitter_ms, anchor_at, queue, kind, payload,
             priority, max_attempts, timeout_ms, paused, next_fire_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15::jsonb, $16, $17, $18, $19, $20)
           RETURNING ${COLUMNS}`,
    values: fieldValues(fields),
  });
  return fromRow(rows[0] as Row);
}

/**
 * Replaces every editable field and bumps the version. With `expectedVersion` the write happens only
 * if nobody edited the schedule since it was read (null then means "changed or gone").
 */
export async function scheduleUpdate(
  db: Queryable,
  id: string,
  fields: ScheduleFields,
  expectedVersion: number | null,
): Promise<ScheduleRow | null> {
  const { rows } = await db.query<Row>({
    name: 'scheduleUpdate',
    text: `UPDATE schedules SET tenant_id = $1, name = $2, spec = $3, time_zone = $4, dst_gap = $5,
             dst_overlap = $6, misfire_policy = $7, misfire_cap = $8, starting_deadline_ms = $9,
             overlap_policy = $10, jitter_ms = $11, anchor_at = $12, queue = $13, kind = $14,
             payload = $15::jsonb, priority = $16, max_attempts = $17, timeout_ms = $18, paused = $19,
             next_fire_at = $20, version = version + 1, updated_at = clock_timestamp(), spec_error = NULL
           WHERE id = $21 AND ($22::integer IS NULL OR version = $22)
           RETURNING ${COLUMNS}`,
    values: [...fieldValues(fields), id, expectedVersion],
  });
  const row = rows[0];
  return row === undefined ? null : fromRow(row);
}

export async function scheduleDelete(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query({
    name: 'scheduleDelete',
    text: 'DELETE FROM schedules WHERE id = $1',
    values: [id],
  });
  return rowCount === 1;
}

export async function scheduleGet(db: Queryable, id: string): Promise<ScheduleRow | null> {
  const { rows } = await db.query<Row>({
    name: 'scheduleGet',
    text: `SELECT ${COLUMNS} FROM schedules WHERE id = $1`,
    values: [id],
  });
  const row = rows[0];
  return row === undefined ? null : fromRow(row);
}

/** Row-locked read for a read-modify-write (pause, resume, edit) inside the caller's transaction. */
export async function scheduleGetForUpdate(db: Queryable, id: string): Promise<ScheduleRow | null> {
  const { rows } = await db.query<Row>({
    name: 'scheduleGetForUpdate',
    text: `SELECT ${COLUMNS} FROM schedules WHERE id = $1 FOR UPDATE`,
    values: [id],
  });
  const row = rows[0];
  return row === undefined ? null : fromRow(row);
}

export async function scheduleGetMany(db: Queryable, ids: string[]): Promise<ScheduleRow[]> {
  const { rows } = await db.query<Row>({
    name: 'scheduleGetMany',
    text: `SELECT ${COLUMNS} FROM schedules WHERE id = ANY($1::uuid[])`,
    values: [ids],
  });
  return rows.map(fromRow);
}

/** A tenant's schedules by name, one keyset page at a time. */
export async function scheduleListByTenant(
  db: Queryable,
  tenantId: string,
  afterName: string | null,
  limit: number,
): Promise<ScheduleRow[]> {
  const { rows } = await db.query<Row>({
    name: 'scheduleListByTenant',
    text: `SELECT ${COLUMNS} FROM schedules
           WHERE tenant_id = $1 AND ($2::text IS NULL OR name > $2)
           ORDER BY name LIMIT $3`,
    values: [tenantId, afterName, limit],
  });
  return rows.map(fromRow);
}

/**
 * Every schedule that can fire, one keyset page by id: what a new leader loads into its in-memory
 * index once per term (never per tick).
 */
export async function scheduleListActivePage(
  db: Queryable,
  afterId: string | null,
  limit: number,
): Promise<ScheduleRow[]> {
  const { rows } = await db.query<Row>({
    name: 'scheduleListActivePage',
    text: `SELECT ${COLUMNS} FROM schedules
           WHERE NOT paused AND next_fire_at IS NOT NULL AND ($1::uuid IS NULL OR id > $1)
           ORDER BY id LIMIT $2`,
    values: [afterId, limit],
  });
  return rows.map(fromRow);
}

/**
 * Where a resync pass resumes: rows edited at `at` and after `id` among those edited at that very
 * instant (null: all of them). `at` is PostgreSQL's own text of the timestamp, so none of its
 * microseconds are lost on the way through a JavaScript Date.
 */
export interface ChangeCursor {
  readonly at: string;
  readonly id: string | null;
}

/**
 * Schedules edited at or after the cursor, in (updated_at, id) order (the periodic resync that backs
 * up LISTEN/NOTIFY), and the cursor after the last one returned. Keyset on both columns: a bulk
 * insert gives thousands of rows one updated_at, and a cursor on the time alone re-read the same
 * first page on every pass, never reaching the edits after it.
 */
export async function scheduleListChangedSince(
  db: Queryable,
  cursor: ChangeCursor,
  limit: number,
): Promise<{ rows: ScheduleRow[]; next: ChangeCursor | null }> {
  const { rows } = await db.query<Row & { updated_at_text: string }>({
    name: 'scheduleListChangedSince',
    text: `SELECT ${COLUMNS}, updated_at::text AS updated_at_text FROM schedules
            WHERE updated_at >= $1::timestamptz
              AND ($2::uuid IS NULL OR (updated_at, id) > ($1::timestamptz, $2::uuid))
            ORDER BY updated_at, id LIMIT $3`,
    values: [cursor.at, cursor.id, limit],
  });
  const last = rows.at(-1);
  return {
    rows: rows.map(fromRow),
    next: last === undefined ? null : { at: last.updated_at_text, id: last.id },
  };
}

export interface DueRef {
  id: string;
  nextFireAt: Date;
  version: number;
}

/**
 * The database's own sorted due index: a bounded range read of schedules_due_idx, earliest first.
 * Cost is O(log n + limit) whatever the table size.
 */
export async function scheduleListDue(db: Queryable, before: Date, limit: number): Promise<DueRef[]> {
  const { rows } = await db.query<{ id: string; next_fire_at: Date; version: number }>({
    name: 'scheduleListDue',
    text: `SELECT id, next_fire_at, version FROM schedules
           WHERE NOT paused AND next_fire_at IS NOT NULL AND next_fire_at <= $1
           ORDER BY next_fire_at, id LIMIT $2`,
    values: [before, limit],
  });
  return rows.map((r) => ({ id: r.id, nextFireAt: r.next_fire_at, version: r.version }));
}

/**
 * Takes a schedule whose stored spec no longer compiles out of the due set, with the reason, unless
 * it was edited since the leader read it (the edit recomputed next_fire_at and may have fixed it).
 * Not fenced by the lease: any leader would make the same decision, and it is undone by an edit.
 */
export async function scheduleMarkBroken(
  db: Queryable,
  broken: { id: string; version: number; error: string }[],
): Promise<number> {
  const { rowCount } = await db.query({
    name: 'scheduleMarkBroken',
    text: `UPDATE schedules s SET next_fire_at = NULL, spec_error = b.error
             FROM unnest($1::uuid[], $2::integer[], $3::text[]) AS b(id, version, error)
            WHERE s.id = b.id AND s.version = b.version`,
    values: [broken.map((b) => b.id), broken.map((b) => b.version), broken.map((b) => b.error)],
  });
  return rowCount ?? 0;
}
