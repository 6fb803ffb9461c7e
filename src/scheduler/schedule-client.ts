/**
 * `client.schedules`: register, edit, pause, resume, delete, trigger now, backfill, list, and read a
 * schedule's occurrence ledger. Input is checked against the same schema as the HTTP API's
 * (src/contract/schedule.ts) before anything is written; a bad field is a ScheduleInputError naming
 * every bad field and the reason, and nothing is written. A read of one schedule by id returns null
 * when it does not exist; an action on a missing id throws ScheduleNotFoundError.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Clock } from '../clock.ts';
import {
  scheduleBackfillChecked,
  scheduleCreateChecked,
  schedulePatchChecked,
  scheduleRuleProblems,
  targetMerge,
  type ScheduleBackfillInput,
  type ScheduleBody,
  type ScheduleInput,
  type ScheduleTargetBody,
  type ScheduleUpdate,
} from '../contract/schedule.ts';
import { NotFoundError, ValidationError, VersionConflictError } from '../errors.ts';
import { PUSH_KIND, PUSH_QUEUE, pushPayload, pushPayloadParse } from '../push/target.ts';
import { SpecError, type CompiledSchedule } from '../schedule/index.ts';
import { dbClockNow } from '../store/leases.ts';
import {
  occurrenceLatenessBySchedule,
  occurrenceLatenessPerMinute,
  type LatenessBucket,
} from '../store/occurrence-rollup.ts';
import {
  occurrenceCountAtFireTimes,
  occurrenceListBySchedule,
  occurrenceMaterialise,
  type OccurrenceRow,
  type OccurrenceSource,
  type OccurrenceState,
} from '../store/occurrences.ts';
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
import { compileRow, planBackfill } from './plan.ts';

/** A schedule as the client returns it. */
export interface Schedule {
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
  /** Intervals count from this instant. */
  anchorAt: Date;
  queue: string;
  /** The handler; `http.post` for a push target, whose payload is `{ url, body }`. */
  kind: string;
  payload: unknown;
  priority: number;
  maxAttempts: number | null;
  timeoutMs: number | null;
  paused: boolean;
  /** Bumped by every edit; pass it as `expectedVersion` to refuse an edit made on top of another. */
  version: number;
  nextFireAt: Date | null;
  lastFireAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  /** Why the scheduler stopped firing it (its spec no longer compiles); cleared by an edit. */
  specError: string | null;
}

/** One row of a schedule's ledger: what was decided for one fire time. */
export interface Occurrence {
  id: number;
  scheduleId: string;
  fireAt: Date;
  /** enqueued, skipped (overlap policy) or missed (misfire policy). */
  state: OccurrenceState;
  /** schedule, or trigger for trigger-now. */
  source: OccurrenceSource;
  materialisedAt: Date;
  /** materialisedAt − fireAt: how late the scheduler decided on it. */
  lagMs: number;
  jobId: number | null;
  reason: string | null;
}

/** What a backfill did (or, as a dry run, would do) over [from, to). */
export interface BackfillResult {
  scheduleId: string;
  from: Date;
  to: Date;
  dryRun: boolean;
  /** The schedule's fire times in [from, to), in its zone with its DST rules. */
  fireTimes: number;
  firstFireAt: Date | null;
  lastFireAt: Date | null;
  /** Occurrences written, each enqueued with its job (a dry run: that would be written). */
  created: number;
  /** Fire times that already had their occurrence and were left as they were. */
  existing: number;
  /** `existing` by the state those occurrences were in: a missed or skipped one stays so. */
  existingByState: Record<OccurrenceState, number>;
}

/**
 * Most fire times one backfill decides. Each becomes a job at once, so this bounds the burst a
 * queue takes from one click: 10,000 is a week of a once-a-minute schedule in two calls, and a call
 * is ten 1,000-row writes, about 2 s on 2 cores, well inside an HTTP request.
 */
export const BACKFILL_MAX = 10_000;
/**
 * Occurrences per backfill statement. Each commits on its own, so a scheduler writing the same fire
 * time waits for at most one such statement (tens of ms), not for the whole backfill.
 */
const BACKFILL_BATCH = 1_000;

export type {
  LatenessBucket,
  OccurrenceSource,
  OccurrenceState,
  ScheduleBackfillInput,
  ScheduleInput,
  ScheduleUpdate,
};

/** Bad input to the schedule client: names each field and the reason. Nothing was written. */
export class ScheduleInputError extends ValidationError {
  override name = 'ScheduleInputError';
}

/** An action named a schedule id that does not exist. */
export class ScheduleNotFoundError extends NotFoundError {
  override name = 'ScheduleNotFoundError';
  constructor(readonly scheduleId: string) {
    super(`schedule ${scheduleId} does not exist`);
  }
}

/** An edit made with `expectedVersion` found the schedule at another version: someone edited it first. */
export class ScheduleVersionConflictError extends VersionConflictError {
  override name = 'ScheduleVersionConflictError';
  constructor(
    readonly currentVersion: number,
    readonly expectedVersion: number,
  ) {
    super(`schedule is at version ${currentVersion}, not the expected ${expectedVersion}`);
  }
}

function invalid(field: string, reason: string, options?: ErrorOptions): ScheduleInputError {
  return new ScheduleInputError([{ field, reason }], options);
}

function scheduleOf(row: ScheduleRow): Schedule {
  return { ...row };
}

function occurrenceOf(row: OccurrenceRow): Occurrence {
  return {
    id: row.id,
    scheduleId: row.scheduleId,
    fireAt: row.fireAt,
    state: row.state,
    source: row.source,
    materialisedAt: row.materialisedAt,
    lagMs: row.lagMs,
    jobId: row.jobId,
    reason: row.reason,
  };
}

/** A checked schedule (its rules too) as row fields; the next fire time is set by the caller. */
function toFields(input: ScheduleBody, now: Date): ScheduleFields {
  const problems = scheduleRuleProblems(input);
  if (problems.length > 0) throw new ScheduleInputError(problems);
  const t = input.target;
  const push = t.url !== undefined;
  const misfire = input.misfire ?? {};
  return {
    tenantId: input.tenantId ?? 'default',
    name: input.name,
    spec: input.spec.trim(),
    timeZone: input.timeZone ?? 'UTC',
    dstGap: input.dstGap ?? 'shift',
    dstOverlap: input.dstOverlap ?? null,
    misfirePolicy: misfire.policy ?? 'latest',
    misfireCap: misfire.cap ?? 100,
    startingDeadlineMs: misfire.startingDeadlineMs ?? null,
    overlapPolicy: input.overlap ?? 'allow',
    jitterMs: input.jitterMs ?? 0,
    anchorAt: input.anchor === undefined ? now : new Date(input.anchor),
    queue: t.queue ?? (push ? PUSH_QUEUE : 'default'),
    kind: push ? PUSH_KIND : (t.kind ?? ''),
    payload: push ? pushPayload(t.url ?? '', t.payload) : (t.payload ?? {}),
    priority: t.priority ?? 0,
    maxAttempts: t.maxAttempts ?? null,
    timeoutMs: t.timeoutMs ?? null,
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
      throw invalid(field, error.message, { cause: error });
    }
    throw error;
  }
}

function nextFireAfter(compiled: CompiledSchedule, after: Date, paused: boolean): Date | null {
  const next = compiled.nextAfter(after);
  if (next === null && !paused) {
    throw invalid('spec', `never fires after ${after.toISOString()}`);
  }
  return next;
}

/** The stored schedule as a complete input, a push target shown as its url and body. */
function wireOf(row: ScheduleRow): ScheduleBody {
  const push = row.kind === PUSH_KIND ? pushPayloadParse(row.payload) : undefined;
  const target: ScheduleTargetBody =
    push === undefined || typeof push === 'string'
      ? { queue: row.queue, kind: row.kind, payload: row.payload }
      : { queue: row.queue, url: push.url, payload: push.body };
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
    anchor: row.anchorAt.toISOString(),
    target: { ...target, priority: row.priority, maxAttempts: row.maxAttempts, timeoutMs: row.timeoutMs },
    paused: row.paused,
  };
}

/** Turns constraint violations the validation cannot see (unknown tenant, taken name) into field errors. */
function mapDbError(error: unknown): never {
  if (error instanceof pg.DatabaseError) {
    if (error.code === '23505' && error.constraint === 'schedules_tenant_id_name_key') {
      throw invalid('name', 'a schedule with this name already exists for the tenant', { cause: error });
    }
    if (error.code === '23503' && error.constraint === 'schedules_tenant_id_fkey') {
      throw invalid('tenantId', 'no such tenant', { cause: error });
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
    const checked = scheduleCreateChecked(input);
    if (Array.isArray(checked)) throw new ScheduleInputError(checked);
    const now = await this.#now(db);
    const fields = toFields(checked, now);
    const compiled = compileFields(fields);
    fields.nextFireAt = fields.paused ? null : nextFireAfter(compiled, now, fields.paused);
    return scheduleOf(await scheduleInsert(db, fields).catch(mapDbError));
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
    const checked = schedulePatchChecked(patch);
    if (Array.isArray(checked)) throw new ScheduleInputError(checked);
    return this.#edit(id, options.expectedVersion ?? null, (current) => {
      const base = wireOf(current);
      return {
        ...base,
        ...checked,
        misfire: { ...base.misfire, ...checked.misfire },
        target: targetMerge(base.target, checked.target),
      };
    });
  }

  pause(id: string): Promise<Schedule> {
    return this.#edit(id, null, (current) => ({ ...wireOf(current), paused: true }));
  }

  /** Resumes from now: occurrences that fell in the pause are not made up. */
  resume(id: string): Promise<Schedule> {
    return this.#edit(id, null, (current) => ({ ...wireOf(current), paused: false }));
  }

  /** Deletes the schedule and its ledger; ScheduleNotFoundError if there is none. */
  async delete(id: string): Promise<void> {
    if (!(await scheduleDelete(this.#pool, id))) throw new ScheduleNotFoundError(id);
  }

  /** The schedule, or null when there is no such schedule. */
  async get(id: string): Promise<Schedule | null> {
    const row = await scheduleGet(this.#pool, id);
    return row === null ? null : scheduleOf(row);
  }

  async list(options: { tenantId?: string; afterName?: string; limit?: number } = {}): Promise<Schedule[]> {
    const rows = await scheduleListByTenant(
      this.#pool,
      options.tenantId ?? 'default',
      options.afterName ?? null,
      options.limit ?? 100,
    );
    return rows.map(scheduleOf);
  }

  /** The schedule's ledger, newest first: did the 09:00 run happen, and how late was it. */
  async occurrences(id: string, options: { before?: Date; limit?: number } = {}): Promise<Occurrence[]> {
    const rows = await occurrenceListBySchedule(this.#pool, id, options.before ?? null, options.limit ?? 100);
    return rows.map(occurrenceOf);
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
      if (row === null) throw new ScheduleNotFoundError(id);
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

  /**
   * Decides the schedule's fire times in [from, to) now, as the scheduler would have had it been
   * running then with misfire policy `all` (planBackfill): each is written through the scheduler's
   * own statement, enqueued with its job (key `occurrence:<schedule>:<fire time>`), unless an
   * occurrence of that fire time already exists, which is left as it is: whoever writes a fire time
   * first, the scheduler or a backfill, decides it, so two backfills, or a backfill and the
   * scheduler, never make two. `dryRun` counts without writing. Works on a paused schedule.
   *
   * `to` may not be after now (fire times still to come are the scheduler's), `from` must be before
   * `to`, and the range may hold at most BACKFILL_MAX fire times; otherwise a ScheduleInputError
   * names the field and nothing is written. Writes go in statements of 1,000, each committed on its
   * own: a call that fails part way has written a prefix, and running it again completes it.
   */
  async backfill(id: string, range: ScheduleBackfillInput): Promise<BackfillResult> {
    const checked = scheduleBackfillChecked(range);
    if (Array.isArray(checked)) throw new ScheduleInputError(checked);
    const from = new Date(checked.from);
    const to = new Date(checked.to);
    const dryRun = checked.dryRun ?? false;
    if (!(from < to)) throw invalid('to', `must be after from (${from.toISOString()})`);
    const now = await this.#now(this.#pool);
    if (to > now) {
      throw invalid(
        'to',
        `is after now (${now.toISOString()}): fire times still to come are the scheduler's to decide`,
      );
    }
    let created = 0;
    for (let attempt = 0; attempt < 3; attempt++) {
      const row = await scheduleGet(this.#pool, id);
      if (row === null) throw new ScheduleNotFoundError(id);
      let compiled: CompiledSchedule;
      try {
        compiled = compileRow(row);
      } catch (error) {
        if (!(error instanceof SpecError)) throw error;
        throw invalid('id', `the schedule's spec no longer compiles (${error.message}): edit it first`, {
          cause: error,
        });
      }
      const plan = planBackfill({ row, compiled }, from, to, BACKFILL_MAX);
      if ('overflow' in plan) {
        throw invalid(
          'from',
          `the range holds more than ${BACKFILL_MAX} fire times; backfill it in parts (the last ${BACKFILL_MAX} start at ${plan.lastCapFrom.toISOString()})`,
        );
      }
      let stale = false;
      for (let i = 0; !dryRun && i < plan.items.length; i += BACKFILL_BATCH) {
        const batch = plan.items.slice(i, i + BACKFILL_BATCH);
        const result = await occurrenceMaterialise(this.#pool, null, batch, []);
        created += result.inserted;
        // The schedule was edited (or deleted) since it was read: plan again from its new version.
        if (result.current < batch.length) {
          stale = true;
          break;
        }
      }
      if (stale) continue;
      const found = await occurrenceCountAtFireTimes(this.#pool, id, plan.fireTimes);
      // After the write every fire time has its occurrence, the ones just written among the enqueued.
      const existingByState = dryRun ? found : { ...found, enqueued: found.enqueued - created };
      const existing = existingByState.enqueued + existingByState.skipped + existingByState.missed;
      return {
        scheduleId: id,
        from,
        to,
        dryRun,
        fireTimes: plan.fireTimes.length,
        firstFireAt: plan.fireTimes[0] ?? null,
        lastFireAt: plan.fireTimes.at(-1) ?? null,
        created: dryRun ? plan.fireTimes.length - existing : created,
        existing,
        existingByState,
      };
    }
    throw new Error(`schedule ${id}: edited concurrently three times while backfilling; try again`);
  }

  async #edit(
    id: string,
    expectedVersion: number | null,
    change: (current: ScheduleRow) => ScheduleBody,
  ): Promise<Schedule> {
    return withTransaction(this.#pool, async (tx) => {
      const current = await scheduleGetForUpdate(tx, id);
      if (current === null) throw new ScheduleNotFoundError(id);
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
      return scheduleOf(updated);
    });
  }
}
