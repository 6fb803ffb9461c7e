/** Jobs: enqueue one or many, list with filters, show with attempts and progress, cancel, retry. */
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { jobAttemptListByJobs } from '../../store/job-attempts.ts';
import { jobIdsInTenant, jobSearch } from '../../store/job-search.ts';
import { jobInsertMany, type JobInsert } from '../../store/job-insert.ts';
import { jobCancel, jobGet, jobRetryMany, JobState, type JobRow } from '../../store/jobs.ts';
import { withTransaction, type Queryable } from '../../store/pool.ts';
import { tenantExists } from '../../store/tenants.ts';
import { PUSH_KIND, PUSH_QUEUE, pushPayload } from '../../push/target.ts';
import type { Api } from '../app.ts';
import { tenantScope } from '../auth.ts';
import { ApiError, badRequest, conflict, notFound, type FieldError } from '../errors.ts';
import { AttemptSchema, JobPage, JobSchema, attemptJson, jobJson, jobPage } from '../job-json.ts';
import {
  JobId,
  Name,
  NonNegativeInt4,
  PageLimit,
  PositiveInt4,
  QueueName,
  TenantId,
  targetFields,
  withErrors,
} from '../schemas.ts';
import type { RouteDeps } from '../server.ts';

export const MAX_JOBS_PER_REQUEST = 1000;

const JobInput = Type.Object(
  {
    ...targetFields('Tidemark POSTs the payload here'),
    payload: Type.Optional(Type.Unknown()),
    priority: Type.Optional(
      Type.Integer({ minimum: -1_000_000, maximum: 1_000_000, description: 'higher runs first' }),
    ),
    runAt: Type.Optional(
      Type.String({ format: 'date-time', description: 'not before this instant (default now)' }),
    ),
    maxAttempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    timeoutMs: Type.Optional(PositiveInt4('deadline per attempt')),
    heartbeatMs: Type.Optional(PositiveInt4('expected heartbeat interval; the lease is 3× this')),
    backoffBaseMs: Type.Optional(NonNegativeInt4('first retry delay')),
    backoffMaxMs: Type.Optional(NonNegativeInt4('longest retry delay')),
    idempotencyKey: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 500,
        description:
          'unique per queue; the same key again returns the existing job. Default: job-<id>-<16 hex>, made from the new job id',
      }),
    ),
    tenantId: Type.Optional(TenantId),
  },
  { additionalProperties: false },
);
type JobInput = Static<typeof JobInput>;

const Enqueued = Type.Object({
  id: Type.Integer(),
  queue: Type.String(),
  idempotencyKey: Type.String(),
  created: Type.Boolean({
    description: 'false: a job with this key already existed and is returned instead',
  }),
});

/** Turns validated input into a row, or names the fields that contradict each other. */
function toInsert(input: JobInput, tenantId: string, at: string, problems: FieldError[]): JobInsert {
  if ((input.kind === undefined) === (input.url === undefined)) {
    problems.push({
      field: `${at}.kind`,
      reason: 'give exactly one of kind (a handler) and url (a push target)',
    });
  }
  if (
    input.backoffBaseMs !== undefined &&
    input.backoffMaxMs !== undefined &&
    input.backoffMaxMs < input.backoffBaseMs
  ) {
    problems.push({ field: `${at}.backoffMaxMs`, reason: 'must be at least backoffBaseMs' });
  }
  const push = input.url !== undefined;
  return {
    queue: input.queue ?? (push ? PUSH_QUEUE : 'default'),
    kind: push ? PUSH_KIND : (input.kind ?? ''),
    tenantId,
    payload: push ? pushPayload(input.url ?? '', input.payload) : (input.payload ?? {}),
    priority: input.priority ?? 0,
    runAt: input.runAt === undefined ? null : new Date(input.runAt),
    maxAttempts: input.maxAttempts ?? null,
    timeoutMs: input.timeoutMs ?? null,
    heartbeatMs: input.heartbeatMs ?? null,
    backoffBaseMs: input.backoffBaseMs ?? null,
    backoffMaxMs: input.backoffMaxMs ?? null,
    idempotencyKey: input.idempotencyKey ?? null,
  };
}

/** The job, if the caller may see it; otherwise 404 whether it exists in another tenant or not at all. */
export async function jobForCaller(db: Queryable, request: FastifyRequest, id: number): Promise<JobRow> {
  const row = await jobGet(db, id);
  const tenant = tenantScope(request, undefined);
  if (row === undefined || (tenant !== undefined && row.tenantId !== tenant)) throw notFound(`job ${id}`);
  return row;
}

export async function tenantForWrite(
  db: Queryable,
  request: FastifyRequest,
  requested: string | undefined,
  field: string,
): Promise<string> {
  const tenant = tenantScope(request, requested) ?? 'default';
  if (requested !== undefined && !(await tenantExists(db, tenant)))
    throw badRequest([{ field, reason: `no tenant ${tenant}` }]);
  return tenant;
}

export function jobRoutes(app: Api, deps: RouteDeps): void {
  const { pool } = deps;

  app.post(
    '/v1/jobs',
    {
      schema: {
        operationId: 'enqueueJobs',
        summary: 'Enqueue one job, or up to 1,000 as { jobs: [...] }',
        tags: ['jobs'],
        body: Type.Union([
          JobInput,
          Type.Object(
            { jobs: Type.Array(JobInput, { minItems: 1, maxItems: MAX_JOBS_PER_REQUEST }) },
            { additionalProperties: false },
          ),
        ]),
        response: withErrors({
          200: Enqueued,
          201: Type.Union([Enqueued, Type.Object({ items: Type.Array(Enqueued) })]),
          409: Type.Ref('Error'),
        }),
      },
    },
    async (request, reply) => {
      const many = 'jobs' in request.body;
      const inputs: JobInput[] = 'jobs' in request.body ? request.body.jobs : [request.body];
      const problems: FieldError[] = [];
      const rows: JobInsert[] = [];
      for (const [i, input] of inputs.entries()) {
        const at = many ? `body.jobs.${i}` : 'body';
        rows.push(
          toInsert(
            input,
            await tenantForWrite(pool, request, input.tenantId, `${at}.tenantId`),
            at,
            problems,
          ),
        );
      }
      if (problems.length > 0) throw badRequest(problems);
      // One job whose key is generated clashes with nothing: no transaction to roll back, and on the
      // pool its wake-up goes out after its commit instead of serialising it with other enqueues'.
      const [only] = rows;
      if (rows.length === 1 && only?.idempotencyKey === null) {
        const [one] = await jobInsertMany(pool, rows);
        if (one === undefined) throw new ApiError(500, 'internal', 'enqueue returned nothing');
        return await reply.status(201).send(many ? { items: [one] } : one);
      }
      const results = await withTransaction(pool, async (tx) => {
        const inserted = await jobInsertMany(tx, rows);
        // A key already used in the queue by another tenant must neither return that job nor hide
        // the clash: the whole request is refused and nothing is written.
        const existing = inserted.filter((r) => !r.created);
        for (const tenant of new Set(existing.map((r) => rows[inserted.indexOf(r)]?.tenantId))) {
          const ids = existing.filter((r) => rows[inserted.indexOf(r)]?.tenantId === tenant).map((r) => r.id);
          const mine = new Set(await jobIdsInTenant(tx, ids, tenant));
          const clash = existing.find((r) => !mine.has(r.id));
          if (clash !== undefined) {
            throw conflict(
              `idempotencyKey ${clash.idempotencyKey} is already used in queue ${clash.queue} by another tenant`,
            );
          }
        }
        return inserted;
      });
      if (many) return await reply.status(201).send({ items: results });
      const one = results[0];
      if (one === undefined) throw new ApiError(500, 'internal', 'enqueue returned nothing');
      return await reply.status(one.created ? 201 : 200).send(one);
    },
  );

  app.get(
    '/v1/jobs',
    {
      schema: {
        operationId: 'listJobs',
        summary: 'List jobs, newest first, filtered and paged',
        tags: ['jobs'],
        querystring: Type.Object(
          {
            queue: Type.Optional(QueueName),
            state: Type.Optional(Type.Union(Object.values(JobState).map((s) => Type.Literal(s)))),
            tenantId: Type.Optional(TenantId),
            kind: Type.Optional(Name),
            createdFrom: Type.Optional(Type.String({ format: 'date-time' })),
            createdTo: Type.Optional(Type.String({ format: 'date-time' })),
            before: Type.Optional(JobId),
            limit: Type.Optional(PageLimit),
          },
          { additionalProperties: false },
        ),
        response: withErrors({ 200: JobPage }),
      },
    },
    async (request) => {
      const q = request.query;
      const limit = q.limit ?? 100;
      const tenant = tenantScope(request, q.tenantId);
      const rows = await jobSearch(pool, {
        tenantId: tenant,
        queue: q.queue,
        state: q.state,
        kind: q.kind,
        createdFrom: q.createdFrom === undefined ? undefined : new Date(q.createdFrom),
        createdTo: q.createdTo === undefined ? undefined : new Date(q.createdTo),
        beforeId: q.before,
        limit,
      });
      return jobPage(rows, limit);
    },
  );

  const IdParams = Type.Object({ id: JobId });

  app.get(
    '/v1/jobs/:id',
    {
      schema: {
        operationId: 'getJob',
        summary: 'Show a job with its attempts and progress',
        tags: ['jobs'],
        params: IdParams,
        response: withErrors({
          200: Type.Composite([JobSchema, Type.Object({ attempts: Type.Array(AttemptSchema) })]),
        }),
      },
    },
    async (request) => {
      const row = await jobForCaller(pool, request, request.params.id);
      const attempts = await jobAttemptListByJobs(pool, [row.id]);
      return { ...jobJson(row), attempts: attempts.map(attemptJson) };
    },
  );

  app.post(
    '/v1/jobs/:id/cancel',
    {
      schema: {
        operationId: 'cancelJob',
        summary: 'Cancel a job: a pending one at once, a running one through its AbortSignal',
        tags: ['jobs'],
        params: IdParams,
        response: withErrors({ 200: Type.Object({ previousState: Type.String(), job: JobSchema }) }),
      },
    },
    async (request) => {
      await jobForCaller(pool, request, request.params.id);
      const result = await jobCancel(pool, request.params.id);
      if (result === undefined) throw notFound(`job ${request.params.id}`);
      return { previousState: result.previous, job: jobJson(result.job) };
    },
  );

  app.post(
    '/v1/jobs/:id/retry',
    {
      schema: {
        operationId: 'retryJob',
        summary: 'Run a dead, cancelled or failed job again now',
        tags: ['jobs'],
        params: IdParams,
        body: Type.Optional(
          Type.Object(
            { extraAttempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 1 })) },
            { additionalProperties: false },
          ),
        ),
        response: withErrors({ 200: JobSchema, 409: Type.Ref('Error') }),
      },
    },
    async (request) => {
      const row = await jobForCaller(pool, request, request.params.id);
      const retried = await jobRetryMany(pool, [row.id], request.body?.extraAttempts ?? 1);
      if (retried.length === 0)
        throw conflict(`job ${row.id} is ${row.state}; only dead, cancelled or failed jobs can be retried`);
      return jobJson(await jobForCaller(pool, request, row.id));
    },
  );
}
