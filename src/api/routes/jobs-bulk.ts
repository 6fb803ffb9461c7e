/**
 * The jobs page's counts and bulk actions: how many jobs each state holds under a filter, and
 * cancel, retry or discard a selection of jobs (ids) or everything matching a filter, a page at a
 * time (newest first, `before` the cursor), so a filter that matches a million jobs is worked
 * through in bounded statements and a running job whose cancel is only requested is not met again.
 */
import { Type } from '@sinclair/typebox';
import { jobCountByState } from '../../store/job-counts.ts';
import { jobDiscardDead } from '../../store/job-discard.ts';
import { jobIdsInTenant, jobSearch } from '../../store/job-search.ts';
import { jobCancel, jobRetryMany, JobState } from '../../store/jobs.ts';
import type { Api } from '../app.ts';
import { tenantScope } from '../auth.ts';
import { badRequest } from '../errors.ts';
import { JobId, Name, QueueName, TenantId } from '../../contract/fields.ts';
import { PayloadFilterText } from '../../contract/payload-filter.ts';
import { JOB_SCAN_LIMIT } from '../../store/job-search.ts';
import { payloadFilterOf } from './jobs.ts';
import { withErrors } from '../schemas.ts';
import type { RouteDeps } from '../server.ts';

const MAX_BULK = 1000;
/** Rows each state's count reads at most: the job list's scan bound, so a tab and its page agree. */
const COUNT_CAP = JOB_SCAN_LIMIT;

const StateName = Type.Union(
  Object.values(JobState).map((s) => Type.Literal(s)),
  { description: 'job state' },
);

const BulkBody = Type.Object(
  {
    action: Type.Union([Type.Literal('cancel'), Type.Literal('retry'), Type.Literal('discard')], {
      description:
        'cancel: pending or running jobs; retry: dead, cancelled or failed; discard: dead (deleted)',
    }),
    ids: Type.Optional(Type.Array(JobId, { minItems: 1, maxItems: MAX_BULK, description: 'a selection' })),
    filter: Type.Optional(
      Type.Object(
        {
          queue: Type.Optional(QueueName),
          state: Type.Optional(StateName),
          kind: Type.Optional(Name),
          payload: Type.Optional(PayloadFilterText),
          tenantId: Type.Optional(TenantId),
        },
        { additionalProperties: false, description: 'or everything matching this, a page at a time' },
      ),
    ),
    before: Type.Optional(JobId),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_BULK, default: MAX_BULK })),
  },
  { additionalProperties: false },
);

export function jobBulkRoutes(app: Api, deps: RouteDeps): void {
  const { pool } = deps;

  app.get(
    '/v1/job-counts',
    {
      schema: {
        operationId: 'countJobs',
        summary: `Jobs per state under a filter; each count reads at most ${COUNT_CAP} jobs of its state (then it means at least that many)`,
        tags: ['jobs'],
        querystring: Type.Object(
          {
            queue: Type.Optional(QueueName),
            kind: Type.Optional(Name),
            payload: Type.Optional(PayloadFilterText),
            tenantId: Type.Optional(TenantId),
          },
          { additionalProperties: false },
        ),
        response: withErrors({
          200: Type.Object({
            counts: Type.Record(Type.String(), Type.Integer()),
            exact: Type.Record(Type.String(), Type.Boolean(), {
              description:
                'false: the count read `cap` jobs of its state and stopped, so it means at least this many',
            }),
            cap: Type.Integer({ description: 'jobs each count reads at most' }),
          }),
        }),
      },
    },
    async (request) => {
      const q = request.query;
      const tenantId = tenantScope(request, q.tenantId);
      const { counts, exact } = await jobCountByState(pool, {
        tenantId,
        queue: q.queue,
        kind: q.kind,
        payload: payloadFilterOf(q.payload, 'query.payload'),
        cap: COUNT_CAP,
      });
      return { counts, exact, cap: COUNT_CAP };
    },
  );

  app.post(
    '/v1/jobs/bulk',
    {
      schema: {
        operationId: 'bulkJobs',
        summary: 'Cancel, retry or discard a selection of jobs, or a page of those matching a filter',
        tags: ['jobs'],
        body: BulkBody,
        response: withErrors({
          200: Type.Object({
            done: Type.Array(Type.Integer(), { description: 'ids the action changed' }),
            notDone: Type.Array(Type.Integer(), {
              description: 'ids selected that it left alone (in a state the action does not apply to)',
            }),
            next: Type.Union([Type.Integer(), Type.Null()], {
              description: `filter mode: pass as \`before\` for the next page; null when none is left. A kind or payload filter reads at most ${JOB_SCAN_LIMIT} jobs a page, so a page may act on none and still have a next`,
            }),
          }),
        }),
      },
    },
    async (request) => {
      const b = request.body;
      if ((b.ids === undefined) === (b.filter === undefined)) {
        throw badRequest([{ field: 'body.ids', reason: 'give ids or a filter, exactly one of them' }]);
      }
      if (b.ids !== undefined && (b.before !== undefined || b.limit !== undefined)) {
        throw badRequest([{ field: 'body.before', reason: 'before and limit page a filter; not with ids' }]);
      }
      const limit = b.limit ?? MAX_BULK;
      let selected: number[];
      let next: number | null = null;
      if (b.ids !== undefined) {
        selected = await jobIdsInTenant(pool, [...new Set(b.ids)], tenantScope(request, undefined));
      } else {
        const f = b.filter ?? {};
        const page = await jobSearch(pool, {
          tenantId: tenantScope(request, f.tenantId),
          queue: f.queue,
          state: f.state,
          kind: f.kind,
          payload: payloadFilterOf(f.payload, 'body.filter.payload'),
          beforeId: b.before,
          limit,
        });
        selected = page.rows.map((r) => r.id);
        next = page.next;
      }
      const done = await act(b.action, selected);
      const taken = new Set(done);
      const asked = b.ids === undefined ? selected : [...new Set(b.ids)];
      return { done, notDone: asked.filter((id) => !taken.has(id)), next };
    },
  );

  async function act(action: 'cancel' | 'retry' | 'discard', ids: number[]): Promise<number[]> {
    if (action === 'retry') return jobRetryMany(pool, ids, 1);
    if (action === 'discard') return jobDiscardDead(pool, ids);
    // One transaction per job: a workflow node's cancel locks its workflow first (jobs.ts).
    const done: number[] = [];
    for (const id of ids) {
      const result = await jobCancel(pool, id);
      if (result === undefined) continue;
      // Cancelled now, or a running job told to stop; a finished one is left as it was.
      if (
        result.previous === 'running' ||
        (result.job.state === 'cancelled' && result.previous !== 'cancelled')
      )
        done.push(id);
    }
    return done;
  }
}
