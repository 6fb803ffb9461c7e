/** Jobs: enqueue one or many, list with filters, show with attempts and progress, cancel, retry. */
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { jobAttemptListByJobs } from '../../store/job-attempts.ts';
import { jobIdsInTenant, jobSearch } from '../../store/job-search.ts';
import { jobInsertMany, type JobInsert } from '../../store/job-insert.ts';
import { jobCancel, jobGet, jobRetryMany, JobState, type JobRow } from '../../store/jobs.ts';
import { withTransaction, type Queryable } from '../../store/pool.ts';
import { tenantExists } from '../../store/tenants.ts';
import { JobInputSchema, MAX_JOBS_PER_REQUEST, jobInsertOf, jobRuleProblems } from '../../contract/job.ts';
import { JobId, Name, PageLimit, QueueName, TenantId } from '../../contract/fields.ts';
import { PayloadFilterText, payloadFilterParse, type PayloadFilter } from '../../contract/payload-filter.ts';
import type { Api } from '../app.ts';
import { tenantScope } from '../auth.ts';
import { ApiError, badRequest, conflict, notFound, type FieldError } from '../errors.ts';
import { AttemptSchema, JobPage, JobSchema, attemptJson, jobJson, jobPage } from '../job-json.ts';
import { withErrors } from '../schemas.ts';
import type { RouteDeps } from '../server.ts';

const Enqueued = Type.Object({
  id: Type.Integer(),
  queue: Type.String(),
  idempotencyKey: Type.String(),
  created: Type.Boolean({
    description: 'false: a job with this key already existed and is returned instead',
  }),
});

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

/** The payload filter's text as the document to contain, or a 400 naming `field`. */
export function payloadFilterOf(text: string | undefined, field: string): PayloadFilter | undefined {
  if (text === undefined) return undefined;
  const parsed = payloadFilterParse(text);
  if ('problem' in parsed) throw badRequest([{ field, reason: parsed.problem }]);
  return parsed.filter;
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
          JobInputSchema,
          Type.Object(
            { jobs: Type.Array(JobInputSchema, { minItems: 1, maxItems: MAX_JOBS_PER_REQUEST }) },
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
      const inputs = 'jobs' in request.body ? request.body.jobs : [request.body];
      const problems: FieldError[] = [];
      const rows: JobInsert[] = [];
      for (const [i, input] of inputs.entries()) {
        const at = many ? `body.jobs.${i}` : 'body';
        problems.push(...jobRuleProblems(input, at));
        rows.push(jobInsertOf(input, await tenantForWrite(pool, request, input.tenantId, `${at}.tenantId`)));
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
            payload: Type.Optional(PayloadFilterText),
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
      const page = await jobSearch(pool, {
        tenantId: tenant,
        queue: q.queue,
        state: q.state,
        kind: q.kind,
        payload: payloadFilterOf(q.payload, 'query.payload'),
        createdFrom: q.createdFrom === undefined ? undefined : new Date(q.createdFrom),
        createdTo: q.createdTo === undefined ? undefined : new Date(q.createdTo),
        beforeId: q.before,
        limit,
      });
      return jobPage(page);
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
