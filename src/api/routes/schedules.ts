/**
 * Schedules over `client.schedules`: register (cron, interval, one-off or an English phrase; the
 * answer echoes the compiled spec, its description and the next five fire times), list, show, edit,
 * delete, pause, resume, trigger now, and the occurrence ledger.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { compileRow } from '../../scheduler/plan.ts';
import { SpecError, type CompiledSchedule } from '../../schedule/index.ts';
import {
  ScheduleBackfillSchema,
  ScheduleCreateSchema,
  SchedulePatchSchema,
} from '../../contract/schedule.ts';
import { PageLimit, TenantId, Uuid } from '../../contract/fields.ts';
import { ValidationError } from '../../errors.ts';
import {
  BACKFILL_MAX,
  ScheduleNotFoundError,
  ScheduleVersionConflictError,
  type BackfillResult,
  type Occurrence,
  type Schedule,
  type ScheduleClient,
  type LatenessBucket,
} from '../../scheduler/schedule-client.ts';
import { PUSH_KIND } from '../../push/target.ts';
import type { Api } from '../app.ts';
import { tenantScope } from '../auth.ts';
import { badRequest, notFound, versionConflict } from '../errors.ts';
import { withErrors } from '../schemas.ts';
import type { RouteDeps } from '../server.ts';

const NEXT_FIRE_TIMES = 5;

const ScheduleSchema = Type.Object({
  id: Type.String(),
  tenantId: Type.String(),
  name: Type.String(),
  spec: Type.String(),
  compiled: Type.Union([
    Type.Object({
      kind: Type.String(),
      canonical: Type.String({ description: 'what the spec compiled to' }),
      description: Type.String(),
      timeZone: Type.String(),
    }),
    Type.Null(),
  ]),
  specError: Type.Union([Type.String(), Type.Null()], {
    description: 'why the stored spec no longer compiles; such a schedule does not fire until edited',
  }),
  nextFireTimes: Type.Array(Type.String({ format: 'date-time' }), {
    description: 'the next five nominal fire times',
  }),
  timeZone: Type.String(),
  dstGap: Type.String(),
  dstOverlap: Type.Union([Type.String(), Type.Null()]),
  misfire: Type.Object({
    policy: Type.String(),
    cap: Type.Integer(),
    startingDeadlineMs: Type.Union([Type.Integer(), Type.Null()]),
  }),
  overlap: Type.String(),
  jitterMs: Type.Integer(),
  target: Type.Object({
    queue: Type.String(),
    kind: Type.String(),
    url: Type.Optional(Type.String()),
    payload: Type.Unknown(),
    priority: Type.Integer(),
    maxAttempts: Type.Union([Type.Integer(), Type.Null()]),
    timeoutMs: Type.Union([Type.Integer(), Type.Null()]),
  }),
  paused: Type.Boolean(),
  version: Type.Integer(),
  nextFireAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  lastFireAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});

const OccurrenceSchema = Type.Object({
  fireAt: Type.String({ format: 'date-time' }),
  state: Type.String({ description: 'enqueued, skipped (overlap policy) or missed (misfire policy)' }),
  source: Type.String({ description: 'schedule, trigger for trigger-now, or backfill' }),
  lateMs: Type.Number({ description: 'how long after its fire time the scheduler decided on it' }),
  jobId: Type.Union([Type.Integer(), Type.Null()]),
  reason: Type.Union([Type.String(), Type.Null()]),
  materialisedAt: Type.String({ format: 'date-time' }),
});

/**
 * A stored spec can stop compiling (a zone withdrawn from the tz database, a grammar change): the
 * scheduler records that as specError and stops firing it, and the API still shows the schedule,
 * with the error instead of a compiled form, so it can be seen and edited.
 */
function compileStored(row: Schedule): CompiledSchedule | { error: string } {
  try {
    return compileRow(row);
  } catch (error) {
    if (error instanceof SpecError) return { error: error.message };
    throw error;
  }
}

function scheduleJson(row: Schedule, now: Date) {
  const stored = compileStored(row);
  const compiled = 'error' in stored ? null : stored;
  const times: string[] = [];
  let at: Date | null = compiled === null ? null : (row.nextFireAt ?? compiled.nextAfter(now));
  while (compiled !== null && at !== null && times.length < NEXT_FIRE_TIMES) {
    times.push(at.toISOString());
    at = compiled.nextAfter(at);
  }
  const push = row.kind === PUSH_KIND && typeof row.payload === 'object' && row.payload !== null;
  const { url, body } = push
    ? (row.payload as { url?: string; body?: unknown })
    : { url: undefined, body: row.payload };
  return {
    id: row.id,
    tenantId: row.tenantId,
    name: row.name,
    spec: row.spec,
    compiled:
      compiled === null
        ? null
        : {
            kind: compiled.kind,
            canonical: compiled.canonical,
            description: compiled.description,
            timeZone: compiled.timeZone,
          },
    specError: 'error' in stored ? stored.error : row.specError,
    nextFireTimes: times,
    timeZone: row.timeZone,
    dstGap: row.dstGap,
    dstOverlap: row.dstOverlap,
    misfire: { policy: row.misfirePolicy, cap: row.misfireCap, startingDeadlineMs: row.startingDeadlineMs },
    overlap: row.overlapPolicy,
    jitterMs: row.jitterMs,
    target: {
      queue: row.queue,
      kind: row.kind,
      ...(push && url !== undefined ? { url } : {}),
      payload: push ? body : row.payload,
      priority: row.priority,
      maxAttempts: row.maxAttempts,
      timeoutMs: row.timeoutMs,
    },
    paused: row.paused,
    version: row.version,
    nextFireAt: row.nextFireAt?.toISOString() ?? null,
    lastFireAt: row.lastFireAt?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

const LatenessSchema = Type.Object({
  at: Type.String({ format: 'date-time', description: 'start of the minute, or of the UTC day' }),
  scheduled: Type.Integer({ description: 'occurrences the schedule enqueued (these carry the lateness)' }),
  triggered: Type.Integer({ description: 'occurrences enqueued on request: trigger-now and backfill' }),
  skipped: Type.Integer(),
  missed: Type.Integer(),
  late: Type.Integer({ description: 'scheduled occurrences decided more than 2 s after their fire time' }),
  lateMeanMs: Type.Number(),
  lateMaxMs: Type.Number(),
});

const latenessRange = {
  from: Type.String({ format: 'date-time', description: 'fire times from this instant' }),
  to: Type.Optional(
    Type.String({ format: 'date-time', description: 'fire times before this (default now)' }),
  ),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_080, description: 'buckets at most' })),
};
const LatenessQuery = Type.Object(latenessRange, { additionalProperties: false });
const ClusterLatenessQuery = Type.Object(
  { ...latenessRange, tenantId: Type.Optional(Type.String()) },
  { additionalProperties: false },
);

function latenessJson(b: LatenessBucket) {
  return {
    at: b.at.toISOString(),
    scheduled: b.scheduled,
    triggered: b.triggered,
    skipped: b.skipped,
    missed: b.missed,
    late: b.late,
    lateMeanMs: b.lagMeanS * 1000,
    lateMaxMs: b.lagMaxS * 1000,
  };
}

const BackfillResultSchema = Type.Object({
  scheduleId: Type.String(),
  from: Type.String({ format: 'date-time' }),
  to: Type.String({ format: 'date-time' }),
  dryRun: Type.Boolean(),
  fireTimes: Type.Integer({ description: "the schedule's fire times in [from, to), in its zone" }),
  firstFireAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  lastFireAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  created: Type.Integer({ description: 'occurrences written, each with its job (a dry run: would be)' }),
  existing: Type.Integer({ description: 'fire times that already had their occurrence, left as they were' }),
  existingByState: Type.Object({ enqueued: Type.Integer(), skipped: Type.Integer(), missed: Type.Integer() }),
});

function backfillJson(r: BackfillResult) {
  return {
    scheduleId: r.scheduleId,
    from: r.from.toISOString(),
    to: r.to.toISOString(),
    dryRun: r.dryRun,
    fireTimes: r.fireTimes,
    firstFireAt: r.firstFireAt?.toISOString() ?? null,
    lastFireAt: r.lastFireAt?.toISOString() ?? null,
    created: r.created,
    existing: r.existing,
    existingByState: r.existingByState,
  };
}

function occurrenceJson(o: Occurrence) {
  return {
    fireAt: o.fireAt.toISOString(),
    state: o.state,
    source: o.source,
    lateMs: Math.max(0, o.lagMs),
    jobId: o.jobId,
    reason: o.reason,
    materialisedAt: o.materialisedAt.toISOString(),
  };
}

/**
 * Maps the client's errors: a bad field is a 400 naming `body.<field>`, a missing schedule a 404, a
 * stale `expectedVersion` a 409 carrying the current version.
 */
async function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof ValidationError) {
      throw badRequest(
        // `id` is the path's: a backfill of a schedule whose stored spec no longer compiles.
        error.fields.map((f) => ({
          field: f.field === 'id' ? 'params.id' : `body.${f.field}`,
          reason: f.reason,
        })),
        { cause: error },
      );
    }
    if (error instanceof ScheduleNotFoundError) throw notFound('schedule');
    if (error instanceof ScheduleVersionConflictError) {
      throw versionConflict(
        `schedule is at version ${error.currentVersion}, not expectedVersion ${error.expectedVersion}`,
        error.currentVersion,
        { cause: error },
      );
    }
    throw error;
  }
}

async function scheduleForCaller(
  schedules: ScheduleClient,
  request: FastifyRequest,
  id: string,
): Promise<Schedule> {
  const row = await schedules.get(id);
  const tenant = tenantScope(request, undefined);
  if (row === null || (tenant !== undefined && row.tenantId !== tenant)) throw notFound(`schedule ${id}`);
  return row;
}

export function scheduleRoutes(app: Api, deps: RouteDeps): void {
  const schedules = deps.client.schedules;
  const now = (): Date => deps.clock.now();
  const IdParams = Type.Object({ id: Uuid });

  app.post(
    '/v1/schedules',
    {
      schema: {
        operationId: 'createSchedule',
        summary: 'Register a schedule',
        tags: ['schedules'],
        body: ScheduleCreateSchema,
        response: withErrors({ 201: ScheduleSchema }),
      },
    },
    async (request, reply) => {
      const tenantId = tenantScope(request, request.body.tenantId) ?? 'default';
      const row = await call(() => schedules.create({ ...request.body, tenantId }));
      return await reply.status(201).send(scheduleJson(row, now()));
    },
  );

  app.get(
    '/v1/schedules',
    {
      schema: {
        operationId: 'listSchedules',
        summary: "List a tenant's schedules by name",
        tags: ['schedules'],
        querystring: Type.Object(
          {
            tenantId: Type.Optional(TenantId),
            after: Type.Optional(
              Type.String({ maxLength: 200, description: 'the `next` of the previous page' }),
            ),
            limit: Type.Optional(PageLimit),
          },
          { additionalProperties: false },
        ),
        response: withErrors({
          200: Type.Object({
            items: Type.Array(ScheduleSchema),
            next: Type.Union([Type.String(), Type.Null()]),
          }),
        }),
      },
    },
    async (request) => {
      const q = request.query;
      const limit = q.limit ?? 100;
      const rows = await schedules.list({
        tenantId: tenantScope(request, q.tenantId) ?? 'default',
        afterName: q.after,
        limit,
      });
      const at = now();
      return {
        items: rows.map((r) => scheduleJson(r, at)),
        next: rows.length === limit ? (rows.at(-1)?.name ?? null) : null,
      };
    },
  );

  app.get(
    '/v1/schedules/:id',
    {
      schema: {
        operationId: 'getSchedule',
        summary: 'Show a schedule',
        tags: ['schedules'],
        params: IdParams,
        response: withErrors({ 200: ScheduleSchema }),
      },
    },
    async (request) => scheduleJson(await scheduleForCaller(schedules, request, request.params.id), now()),
  );

  app.patch(
    '/v1/schedules/:id',
    {
      schema: {
        operationId: 'updateSchedule',
        summary: 'Edit a schedule (fields left out keep their value); bumps its version',
        tags: ['schedules'],
        params: IdParams,
        querystring: Type.Object(
          {
            expectedVersion: Type.Optional(
              Type.Integer({
                minimum: 1,
                maximum: 2_147_483_647,
                description: 'refuse if someone else edited it first',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        body: SchedulePatchSchema,
        response: withErrors({ 200: ScheduleSchema, 409: Type.Ref('Error') }),
      },
    },
    async (request) => {
      const current = await scheduleForCaller(schedules, request, request.params.id);
      const row = await call(() =>
        schedules.update(current.id, request.body, { expectedVersion: request.query.expectedVersion }),
      );
      return scheduleJson(row, now());
    },
  );

  app.delete(
    '/v1/schedules/:id',
    {
      schema: {
        operationId: 'deleteSchedule',
        summary: 'Delete a schedule and its ledger',
        tags: ['schedules'],
        params: IdParams,
        response: withErrors({ 204: Type.Null() }),
      },
    },
    async (request, reply) => {
      const current = await scheduleForCaller(schedules, request, request.params.id);
      await call(() => schedules.delete(current.id));
      return await reply.status(204).send();
    },
  );

  for (const action of ['pause', 'resume'] as const) {
    app.post(
      `/v1/schedules/:id/${action}`,
      {
        schema: {
          operationId: `${action}Schedule`,
          summary:
            action === 'pause' ? 'Pause a schedule' : 'Resume a schedule from now (the pause is not made up)',
          tags: ['schedules'],
          params: IdParams,
          response: withErrors({ 200: ScheduleSchema }),
        },
      },
      async (request) => {
        const current = await scheduleForCaller(schedules, request, request.params.id);
        return scheduleJson(await call(() => schedules[action](current.id)), now());
      },
    );
  }

  app.post(
    '/v1/schedules/:id/trigger',
    {
      schema: {
        operationId: 'triggerSchedule',
        summary: "Run the schedule's target now, through the same path as a scheduled occurrence",
        tags: ['schedules'],
        params: IdParams,
        response: withErrors({
          201: Type.Object({ jobId: Type.Integer(), firedAt: Type.String({ format: 'date-time' }) }),
        }),
      },
    },
    async (request, reply) => {
      const current = await scheduleForCaller(schedules, request, request.params.id);
      const { jobId, firedAt } = await call(() => schedules.triggerNow(current.id));
      return await reply.status(201).send({ jobId, firedAt: firedAt.toISOString() });
    },
  );

  app.post(
    '/v1/schedules/:id/backfill',
    {
      schema: {
        operationId: 'backfillSchedule',
        summary: `Decide the schedule's fire times in [from, to) now: each one without an occurrence is enqueued with its job, through the scheduler's own write; at most ${BACKFILL_MAX} per call; dryRun counts only`,
        tags: ['schedules'],
        params: IdParams,
        body: ScheduleBackfillSchema,
        response: withErrors({ 200: BackfillResultSchema }),
      },
    },
    async (request) => {
      const current = await scheduleForCaller(schedules, request, request.params.id);
      return backfillJson(await call(() => schedules.backfill(current.id, request.body)));
    },
  );

  app.get(
    '/v1/schedules/:id/occurrences',
    {
      schema: {
        operationId: 'listScheduleOccurrences',
        summary: 'The occurrence ledger, newest first: fire time, state, lateness, job',
        tags: ['schedules'],
        params: IdParams,
        querystring: Type.Object(
          {
            before: Type.Optional(
              Type.String({ format: 'date-time', description: 'the `next` of the previous page' }),
            ),
            limit: Type.Optional(PageLimit),
          },
          { additionalProperties: false },
        ),
        response: withErrors({
          200: Type.Object({
            items: Type.Array(OccurrenceSchema),
            next: Type.Union([Type.String(), Type.Null()]),
          }),
        }),
      },
    },
    async (request) => {
      const current = await scheduleForCaller(schedules, request, request.params.id);
      const limit = request.query.limit ?? 100;
      const before = request.query.before === undefined ? undefined : new Date(request.query.before);
      const rows = await schedules.occurrences(current.id, { before, limit });
      return {
        items: rows.map(occurrenceJson),
        next: rows.length === limit ? (rows.at(-1)?.fireAt.toISOString() ?? null) : null,
      };
    },
  );

  app.get(
    '/v1/schedules/:id/lateness',
    {
      schema: {
        operationId: 'getScheduleLateness',
        summary:
          "The schedule's occurrences per UTC day, newest first: counts and lateness, kept after retention prunes the ledger",
        tags: ['schedules'],
        params: IdParams,
        querystring: LatenessQuery,
        response: withErrors({ 200: Type.Object({ items: Type.Array(LatenessSchema) }) }),
      },
    },
    async (request) => {
      const current = await scheduleForCaller(schedules, request, request.params.id);
      const rows = await schedules.lateness(current.id, {
        from: new Date(request.query.from),
        to: request.query.to === undefined ? now() : new Date(request.query.to),
        limit: request.query.limit ?? 100,
      });
      return { items: rows.map(latenessJson) };
    },
  );

  app.get(
    '/v1/lateness',
    {
      schema: {
        operationId: 'listLateness',
        summary:
          'Occurrences per minute of fire time, oldest first: counts and lateness of every schedule (the tenant’s, for a tenant token)',
        tags: ['schedules'],
        querystring: ClusterLatenessQuery,
        response: withErrors({ 200: Type.Object({ items: Type.Array(LatenessSchema) }) }),
      },
    },
    async (request) => {
      const tenantId = tenantScope(request, request.query.tenantId);
      const rows = await schedules.latenessPerMinute({
        from: new Date(request.query.from),
        to: request.query.to === undefined ? now() : new Date(request.query.to),
        tenantId,
        limit: request.query.limit ?? 1_440,
      });
      return { items: rows.map(latenessJson) };
    },
  );
}
