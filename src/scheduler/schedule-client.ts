/**
 * `client.schedules`: register, edit, pause, resume, delete, trigger now, list, and read a
 * schedule's occurrence ledger. Input is validated completely before anything is written; a bad
 * field is a ScheduleInputError naming the field and the reason, and nothing is written.
 */
import {
  occurrenceLatenessBySchedule,
  occurrenceLatenessPerMinute,
  type LatenessBucket,
} from '../store/occurrence-rollup.ts';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Clock } from '../clock.ts';
import { jsonTextProblem, textProblem } from '../input.ts';
import { SpecError, type CompiledSchedule } from '../schedule/index.ts';
import { dbClockNow } from '../store/leases.ts';
import { occurrenceListBySchedule, occurrenceMaterialise, type OccurrenceRow } from '../store/occurrences.ts';
import { withTransaction, type Pool, type Queryable } from '../store/pool.ts';
import {
  scheduleDelete,
  scheduleGet,
  scheduleGetForUpdate,
  scheduleInsert,
  scheduleListByTenant,
  scheduleUpdate,
  type ScheduleFields,
  type ScheduleRow,
} from '../store/schedules.ts';
import { compileRow } from './plan.ts';

export type Schedule = ScheduleRow;
export type Occurrence = OccurrenceRow;

export class ScheduleInputError extends Error {
  override name = 'ScheduleInputError';
  readonly field: string;
  readonly reason: string;

  constructor(field: string, reason: string, options?: ErrorOptions) {
    super(`${field}: ${reason}`, options);
    this.field = field;
    this.reason = reason;
  }
}

export class ScheduleNotFoundError extends Error {
  override name = 'ScheduleNotFoundError';
}

/** An edit made with `expectedVersion` found the schedule at another version: someone edited it first. */
export class ScheduleVersionConflictError extends Error {
  override name = 'ScheduleVersionConflictError';
  constructor(
    readonly currentVersion: number,
    readonly expectedVersion: number,
  ) {
    super(`schedule is at version ${currentVersion}, not the expected ${expectedVersion}`);
  }
}

export interface ScheduleInput {
  /** Default 'default'. */
  tenantId?: string;
  name: string;
  /** Anything the schedule core accepts: cron, `every 90s`, `at <ISO>`, an English phrase. */
  spec: string;
  timeZone?: string;
  dstGap?: 'shift' | 'skip';
  dstOverlap?: 'first' | 'both' | null;
  misfire?: { policy?: 'all' | 'latest' | 'skip'; cap?: number; startingDeadlineMs?: number | null };
  overlap?: 'allow' | 'forbid' | 'replace' | 'buffer_one';
  jitterMs?: number;
  /** Intervals count from here. Default: the moment it is created, on the database's clock. */
  anchor?: Date;
  target: {
    queue: string;
    kind: string;
    payload?: unknown;
    priority?: number;
    maxAttempts?: number | null;
    timeoutMs?: number | null;
  };
  paused?: boolean;
}

export type ScheduleUpdate = Partial<Omit<ScheduleInput, 'target' | 'misfire'>> & {
  target?: Partial<ScheduleInput['target']>;
  misfire?: ScheduleInput['misfire'];
};

const TENANT_RE = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const QUEUE_RE = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
const MISFIRE = ['all', 'latest', 'skip'] as const;
const OVERLAP = ['allow', 'forbid', 'replace', 'buffer_one'] as const;

function positiveInt(field: string, value: unknown): number {
  if (!Number.isSafeInteger(value) || (value as number) <= 0) {
    throw new ScheduleInputError(field, `must be a positive integer, got ${JSON.stringify(value)}`);
  }
  return value as number;
}

function oneOf<T extends string>(field: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw new ScheduleInputError(field, `must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`);
  }
  return value as T;
}

/** Validates and normalises `input` into the row fields (next fire time set by the caller). */
function toFields(input: ScheduleInput, now: Date): ScheduleFields {
  if (typeof input !== 'object' || input === null) throw new ScheduleInputError('input', 'must be an object');
  const tenantId = input.tenantId ?? 'default';
  if (typeof tenantId !== 'string' || !TENANT_RE.test(tenantId)) {
    throw new ScheduleInputError(
      'tenantId',
      `must match ${TENANT_RE.source}, got ${JSON.stringify(tenantId)}`,
    );
  }
  if (typeof input.name !== 'string' || input.name.trim() === '' || input.name.length > 200) {
    throw new ScheduleInputError('name', 'must be a non-empty string of at most 200 characters');
  }
  const target = input.target as ScheduleInput['target'] | undefined;
  if (typeof target !== 'object' || target === null) throw new ScheduleInputError('target', 'is required');
  if (typeof target.queue !== 'string' || !QUEUE_RE.test(target.queue)) {
    throw new ScheduleInputError(
      'target.queue',
      `must match ${QUEUE_RE.source}, got ${JSON.stringify(target.queue)}`,
    );
  }
  if (typeof target.kind !== 'string' || target.kind.trim() === '' || target.kind.length > 200) {
    throw new ScheduleInputError('target.kind', 'must be a non-empty string of at most 200 characters');
  }
  const payload = target.payload ?? {};
  let payloadJson: string | undefined;
  try {
    payloadJson = JSON.stringify(payload);
    if (payloadJson === undefined) throw new TypeError('not representable in JSON');
  } catch (error) {
    throw new ScheduleInputError('target.payload', 'must be JSON-serialisable', { cause: error });
  }
  const payloadProblem = jsonTextProblem(payloadJson);
  if (payloadProblem !== undefined) throw new ScheduleInputError('target.payload', payloadProblem);
  // Text PostgreSQL cannot store fails here, naming the field, not as an encoding error from the server.
  for (const [field, value] of [
    ['name', input.name],
    ['spec', input.spec],
    ['timeZone', input.timeZone],
    ['target.kind', target.kind],
  ] as const) {
    const problem = typeof value === 'string' ? textProblem(value) : undefined;
    if (problem !== undefined) throw new ScheduleInputError(field, problem);
  }
  const priority = target.priority ?? 0;
  if (!Number.isSafeInteger(priority) || Math.abs(priority) > 2 ** 31 - 1) {
    throw new ScheduleInputError(
      'target.priority',
      `must be a 32-bit integer, got ${JSON.stringify(priority)}`,
    );
  }
  const misfire = input.misfire ?? {};
  const jitterMs = input.jitterMs ?? 0;
  if (!Number.isSafeInteger(jitterMs) || jitterMs < 0 || jitterMs > 2 ** 31 - 1) {
    throw new ScheduleInputError(
      'jitterMs',
      `must be a non-negative integer, got ${JSON.stringify(jitterMs)}`,
    );
  }
  const anchor = input.anchor ?? now;
  if (!(anchor instanceof Date) || Number.isNaN(anchor.getTime())) {
    throw new ScheduleInputError('anchor', 'must be a valid Date');
  }
  return {
    tenantId,
    name: input.name,
    // A non-string spec reaches compileSchedule as is, which names the field in its error.
    spec: typeof input.spec === 'string' ? input.spec.trim() : input.spec,
    timeZone: input.timeZone ?? 'UTC',
    dstGap: oneOf('dstGap', input.dstGap ?? 'shift', ['shift', 'skip'] as const),
    dstOverlap:
      input.dstOverlap == null ? null : oneOf('dstOverlap', input.dstOverlap, ['first', 'both'] as const),
    misfirePolicy: oneOf('misfire.policy', misfire.policy ?? 'latest', MISFIRE),
    misfireCap: positiveInt('misfire.cap', misfire.cap ?? 100),
    startingDeadlineMs:
      misfire.startingDeadlineMs == null
        ? null
        : positiveInt('misfire.startingDeadlineMs', misfire.startingDeadlineMs),
    overlapPolicy: oneOf('overlap', input.overlap ?? 'allow', OVERLAP),
    jitterMs,
    anchorAt: anchor,
    queue: target.queue,
    kind: target.kind,
    payload,
    priority,
    maxAttempts: target.maxAttempts == null ? null : positiveInt('target.maxAttempts', target.maxAttempts),
    timeoutMs: target.timeoutMs == null ? null : positiveInt('target.timeoutMs', target.timeoutMs),
    paused: input.paused ?? false,
    nextFireAt: null,
  };
}

/** Compiles the spec of `fields`, mapping the core's SpecError to the input field it came from. */
function compileFields(fields: ScheduleFields): CompiledSchedule {
  try {
    return compileRow({
      ...fields,
      id: '',
      version: 0,
      lastFireAt: null,
      specError: null,
      createdAt: fields.anchorAt,
      updatedAt: fields.anchorAt,
    });
  } catch (error) {
    if (error instanceof SpecError) {
      const field = ['timeZone', 'dstGap', 'dstOverlap', 'anchor'].includes(error.field)
        ? error.field
        : 'spec';
      throw new ScheduleInputError(field, error.message, { cause: error });
    }
    throw error;
  }
}

function nextFireAfter(compiled: CompiledSchedule, after: Date, paused: boolean): Date | null {
  const next = compiled.nextAfter(after);
  if (next === null && !paused) {
    throw new ScheduleInputError('spec', `never fires after ${after.toISOString()}`);
  }
  return next;
}

function fromInput(row: ScheduleRow): ScheduleInput {
  return {
    tenantId: row.tenantId,
    name: row.name,
    spec: row.spec,
    timeZone: row.timeZone,
    dstGap: row.dstGap,
    dstOverlap: row.dstOverlap,
    misfire: { policy: row.misfirePolicy, cap: row.misfireCap, startingDeadlineMs: row.startingDeadlineMs },
    overlap: row.overlapPolicy,
    jitterMs: row.jitterMs,
    anchor: row.anchorAt,
    target: {
      queue: row.queue,
      kind: row.kind,
      payload: row.payload,
      priority: row.priority,
      maxAttempts: row.maxAttempts,
      timeoutMs: row.timeoutMs,
    },
    paused: row.paused,
  };
}

/** Turns constraint violations the validation cannot see (unknown tenant, taken name) into field errors. */
function mapDbError(error: unknown): never {
  if (error instanceof pg.DatabaseError) {
    if (error.code === '23505' && error.constraint === 'schedules_tenant_id_name_key') {
      throw new ScheduleInputError('name', 'a schedule with this name already exists for the tenant', {
        cause: error,
      });
    }
    if (error.code === '23503' && error.constraint === 'schedules_tenant_id_fkey') {
      throw new ScheduleInputError('tenantId', 'no such tenant', { cause: error });
    }
  }
  throw error;
}

export class ScheduleClient {
  readonly #pool: Pool;
  readonly #clock: Clock | undefined;

  /**
   * Every fire time decided here (create, update, resume, trigger) counts from the database's clock,
   * the one the scheduler runs on: a client host 5 min slow would otherwise backfill five minutes
   * of occurrences from before the schedule existed, and one 5 min fast would skip them. `clock` is
   * for tests only: when given, it replaces the database's clock.
   */
  constructor(pool: Pool, clock?: Clock) {
    this.#pool = pool;
    this.#clock = clock;
  }

  /** The instant fire times count from: the injected test clock, else the database's clock. */
  async #now(db: Queryable): Promise<Date> {
    return this.#clock === undefined ? dbClockNow(db) : this.#clock.now();
  }

  create(input: ScheduleInput): Promise<Schedule> {
    return this.createTx(this.#pool, input);
  }

  /** create() inside the caller's transaction. */
  async createTx(db: Queryable, input: ScheduleInput): Promise<Schedule> {
    const now = await this.#now(db);
    const fields = toFields(input, now);
    const compiled = compileFields(fields);
    fields.nextFireAt = fields.paused ? null : nextFireAfter(compiled, now, fields.paused);
    return scheduleInsert(db, fields).catch(mapDbError);
  }

  /**
   * Applies `patch` on top of the stored schedule, bumps its version and recomputes the next fire
   * time (never earlier than an occurrence already decided on). With `expectedVersion`, fails with
   * ScheduleVersionConflictError if someone else edited it first.
   */
  async update(
    id: string,
    patch: ScheduleUpdate,
    options: { expectedVersion?: number } = {},
  ): Promise<Schedule> {
    return this.#edit(id, options.expectedVersion ?? null, (current) => {
      const base = fromInput(current);
      return {
        ...base,
        ...patch,
        misfire: { ...base.misfire, ...patch.misfire },
        target: { ...base.target, ...patch.target },
      };
    });
  }

  pause(id: string): Promise<Schedule> {
    return this.#edit(id, null, (current) => ({ ...fromInput(current), paused: true }));
  }

  /** Resumes from now: occurrences that fell in the pause are not made up. */
  resume(id: string): Promise<Schedule> {
    return this.#edit(id, null, (current) => ({ ...fromInput(current), paused: false }));
  }

  async delete(id: string): Promise<boolean> {
    return scheduleDelete(this.#pool, id);
  }

  async get(id: string): Promise<Schedule | null> {
    return scheduleGet(this.#pool, id);
  }

  async list(options: { tenantId?: string; afterName?: string; limit?: number } = {}): Promise<Schedule[]> {
    return scheduleListByTenant(
      this.#pool,
      options.tenantId ?? 'default',
      options.afterName ?? null,
      options.limit ?? 100,
    );
  }

  /** The schedule's ledger, newest first: did the 09:00 run happen, and how late was it. */
  async occurrences(id: string, options: { before?: Date; limit?: number } = {}): Promise<Occurrence[]> {
    return occurrenceListBySchedule(this.#pool, id, options.before ?? null, options.limit ?? 100);
  }

  /**
   * The schedule's occurrences per UTC day of fire time in [from, to), newest first: counts and
   * lateness, from the ledger's rows and, once retention has pruned them, from its rollup.
   */
  async lateness(id: string, range: { from: Date; to: Date; limit?: number }): Promise<LatenessBucket[]> {
    return occurrenceLatenessBySchedule(this.#pool, id, { ...range, limit: range.limit ?? 100 });
  }

  /** Lateness per minute of fire time in [from, to), oldest first, all tenants or one. */
  async latenessPerMinute(range: {
    from: Date;
    to: Date;
    tenantId?: string;
    limit?: number;
  }): Promise<LatenessBucket[]> {
    return occurrenceLatenessPerMinute(this.#pool, { ...range, limit: range.limit ?? 1_440 });
  }

  /**
   * Runs the schedule's target now, through the scheduler's own write (a ledger row with source
   * 'trigger' and a job keyed `trigger:<schedule>:<uuid>`, which no scheduled occurrence can
   * collide with). Works on a paused schedule too.
   */
  async triggerNow(id: string): Promise<{ jobId: number; firedAt: Date }> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const row = await scheduleGet(this.#pool, id);
      if (row === null) throw new ScheduleNotFoundError(`schedule ${id} does not exist`);
      const firedAt = await this.#now(this.#pool);
      const result = await occurrenceMaterialise(
        this.#pool,
        null,
        [
          {
            scheduleId: id,
            version: row.version,
            fireAt: firedAt,
            state: 'enqueued',
            reason: 'triggered',
            runAt: firedAt,
            idempotencyKey: `trigger:${id}:${randomUUID()}`,
            source: 'trigger',
            cancelPrevious: false,
          },
        ],
        [],
      );
      const jobId = result.jobIds[0];
      if (jobId !== undefined) return { jobId, firedAt };
      // The schedule was edited between the read and the write; read it again.
    }
    throw new Error(`schedule ${id}: edited concurrently three times while triggering; try again`);
  }

  async #edit(
    id: string,
    expectedVersion: number | null,
    change: (current: ScheduleRow) => ScheduleInput,
  ): Promise<Schedule> {
    return withTransaction(this.#pool, async (tx) => {
      const current = await scheduleGetForUpdate(tx, id);
      if (current === null) throw new ScheduleNotFoundError(`schedule ${id} does not exist`);
      if (expectedVersion !== null && current.version !== expectedVersion) {
        throw new ScheduleVersionConflictError(current.version, expectedVersion);
      }
      const now = await this.#now(tx);
      const fields = toFields(change(current), now);
      const compiled = compileFields(fields);
      const from = current.lastFireAt !== null && current.lastFireAt > now ? current.lastFireAt : now;
      fields.nextFireAt = fields.paused ? null : nextFireAfter(compiled, from, fields.paused);
      const updated = await scheduleUpdate(tx, id, fields, current.version).catch(mapDbError);
      if (updated === null) throw new Error(`schedule ${id}: changed while locked`);
      return updated;
    });
  }
}
