/**
 * The dead letter: jobs that exhausted their attempts (or failed without retry), listed, re-run or
 * discarded. Left alone, a dead job stays until retention removes it (30 days by default).
 */
import { Type } from '@sinclair/typebox';
import { jobDeadIdsSearch, jobIdsInTenant, jobSearch } from '../../store/job-search.ts';
import { jobDiscardDead } from '../../store/job-discard.ts';
import { jobRetryMany } from '../../store/jobs.ts';
import type { Api } from '../app.ts';
import { tenantScope } from '../auth.ts';
import { badRequest } from '../errors.ts';
import { JobPage, jobPage } from '../job-json.ts';
import { JobId, Name, PageLimit, QueueName, TenantId } from '../../contract/fields.ts';
import { withErrors } from '../schemas.ts';
import type { RouteDeps } from '../server.ts';

const MAX_RETRY = 1000;

/** The body fields by which a bulk retry or discard names its dead jobs: ids, or a filter. */
const DEAD_SELECTION = {
  ids: Type.Optional(Type.Array(JobId, { minItems: 1, maxItems: MAX_RETRY })),
  queue: Type.Optional(QueueName),
  kind: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  tenantId: Type.Optional(TenantId),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_RETRY, default: 100 })),
};

/** The ids asked for (or selected) that the action did not take, each once. */
function leftOut(asked: number[], done: number[]): number[] {
  const taken = new Set(done);
  return [...new Set(asked)].filter((id) => !taken.has(id));
}

/** Dead jobs a retry or discard names: the ids given (only those dead and visible), or a filter's. */
async function selectDead(
  pool: RouteDeps['pool'],
  b: { ids?: number[]; queue?: string; kind?: string; limit?: number },
  tenant: string | undefined,
): Promise<number[]> {
  if (b.ids !== undefined && (b.queue !== undefined || b.kind !== undefined || b.limit !== undefined)) {
    throw badRequest([{ field: 'body.ids', reason: 'give ids or a filter (queue, kind, limit), not both' }]);
  }
  return b.ids === undefined
    ? await jobDeadIdsSearch(pool, { tenantId: tenant, queue: b.queue, kind: b.kind, limit: b.limit ?? 100 })
    : // Only dead ones: jobRetryMany would also re-run cancelled and failed jobs.
      await jobIdsInTenant(pool, [...new Set(b.ids)], tenant, 'dead');
}

export function deadLetterRoutes(app: Api, deps: RouteDeps): void {
  const { pool } = deps;

  app.get(
    '/v1/dead-letter',
    {
      schema: {
        operationId: 'listDeadJobs',
        summary: 'List dead jobs, newest first',
        tags: ['dead-letter'],
        querystring: Type.Object(
          {
            queue: Type.Optional(QueueName),
            kind: Type.Optional(Name),
            tenantId: Type.Optional(TenantId),
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
      const page = await jobSearch(pool, {
        tenantId: tenantScope(request, q.tenantId),
        queue: q.queue,
        kind: q.kind,
        state: 'dead',
        beforeId: q.before,
        limit,
      });
      return jobPage(page);
    },
  );

  app.post(
    '/v1/dead-letter/retry',
    {
      schema: {
        operationId: 'retryDeadJobs',
        summary: 'Re-run dead jobs, by ids or by filter (up to 1,000 per call)',
        tags: ['dead-letter'],
        body: Type.Object(
          {
            ...DEAD_SELECTION,
            extraAttempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 1 })),
          },
          { additionalProperties: false },
        ),
        response: withErrors({
          200: Type.Object({
            retried: Type.Array(Type.Integer()),
            notRetried: Type.Array(Type.Integer(), {
              description: 'ids asked for that are not dead (or not visible to this token)',
            }),
          }),
        }),
      },
    },
    async (request) => {
      const b = request.body;
      const ids = await selectDead(pool, b, tenantScope(request, b.tenantId));
      const retried = await jobRetryMany(pool, ids, b.extraAttempts ?? 1);
      return { retried: retried.sort((x, y) => x - y), notRetried: leftOut(b.ids ?? ids, retried) };
    },
  );

  app.post(
    '/v1/dead-letter/discard',
    {
      schema: {
        operationId: 'discardDeadJobs',
        summary: 'Delete dead jobs with their attempts, by ids or by filter (up to 1,000 per call)',
        tags: ['dead-letter'],
        body: Type.Object(DEAD_SELECTION, { additionalProperties: false }),
        response: withErrors({
          200: Type.Object({
            discarded: Type.Array(Type.Integer()),
            notDiscarded: Type.Array(Type.Integer(), {
              description: 'ids asked for that are not dead (or not visible to this token)',
            }),
          }),
        }),
      },
    },
    async (request) => {
      const b = request.body;
      const ids = await selectDead(pool, b, tenantScope(request, b.tenantId));
      const discarded = await jobDiscardDead(pool, ids);
      return { discarded, notDiscarded: leftOut(b.ids ?? ids, discarded) };
    },
  );
}
