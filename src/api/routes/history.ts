/**
 * GET /v1/history: what the dashboard's overview charts, minute by minute over the last hours, read
 * from the database rather than gathered by an open tab: schedule lateness p50/p99, jobs succeeded
 * and attempts failed, and the backlog. A tenant token sees its own tenant's figures.
 */
import { Type } from '@sinclair/typebox';
import {
  historyBacklogPerMinute,
  historyLagPerMinute,
  historyThroughputPerMinute,
} from '../../store/history.ts';
import type { Api } from '../app.ts';
import { tenantScope } from '../auth.ts';
import { badRequest } from '../errors.ts';
import { QueueName, TenantId } from '../../contract/fields.ts';
import { withErrors } from '../schemas.ts';
import type { RouteDeps } from '../server.ts';

/** A day of minutes: the backlog and percentile reads grow with the window; the charts show hours. */
const MAX_WINDOW_MS = 24 * 3600_000;
const DEFAULT_WINDOW_MS = 3 * 3600_000;

const HistoryQuery = Type.Object(
  {
    from: Type.Optional(
      Type.String({ format: 'date-time', description: 'window start (default three hours before `to`)' }),
    ),
    to: Type.Optional(Type.String({ format: 'date-time', description: 'window end (default now)' })),
    tenantId: Type.Optional(TenantId),
    queue: Type.Optional(QueueName),
  },
  { additionalProperties: false },
);

const Minute = (fields: Parameters<typeof Type.Object>[0]) =>
  Type.Object({ at: Type.String({ format: 'date-time' }), ...fields });

const HistoryBody = Type.Object({
  from: Type.String({ format: 'date-time' }),
  to: Type.String({ format: 'date-time' }),
  lag: Type.Array(
    Minute({
      count: Type.Integer({ description: 'scheduled occurrences fired in the minute' }),
      p50Ms: Type.Number(),
      p99Ms: Type.Number(),
      exact: Type.Boolean({
        description: 'false where retention rolled the minute up: mean and worst stand in for p50 and p99',
      }),
    }),
    { description: 'schedule lateness per minute of fire time; minutes with no occurrence are absent' },
  ),
  throughput: Type.Array(
    Minute({
      succeeded: Type.Integer({ description: 'jobs that succeeded in the minute' }),
      failed: Type.Integer({ description: 'attempts that failed, timed out or lost their lease' }),
    }),
    { description: 'per minute of finish time; minutes with neither are absent' },
  ),
  backlog: Type.Array(
    Minute({ waiting: Type.Integer({ description: 'jobs due and not started at `at`' }) }),
    { description: 'at the end of every minute of the window' },
  ),
});

function instant(field: string, text: string): Date {
  const at = new Date(text);
  if (Number.isNaN(at.getTime())) throw badRequest([{ field, reason: 'not a representable instant' }]);
  return at;
}

export function historyRoutes(app: Api, deps: RouteDeps): void {
  app.get(
    '/v1/history',
    {
      schema: {
        operationId: 'getHistory',
        summary:
          'Per-minute history for charts: schedule lateness p50/p99, jobs succeeded and attempts failed, backlog',
        tags: ['metrics'],
        querystring: HistoryQuery,
        response: withErrors({ 200: HistoryBody }, [400, 401, 404, 429]),
      },
    },
    async (request) => {
      const q = request.query;
      const to = q.to === undefined ? deps.clock.now() : instant('query.to', q.to);
      const from =
        q.from === undefined ? new Date(to.getTime() - DEFAULT_WINDOW_MS) : instant('query.from', q.from);
      if (from >= to) throw badRequest([{ field: 'query.from', reason: 'must be before `to`' }]);
      if (to.getTime() - from.getTime() > MAX_WINDOW_MS)
        throw badRequest([{ field: 'query.from', reason: 'the window is at most 24 hours' }]);
      const tenantId = tenantScope(request, q.tenantId);
      const range = { from, to, tenantId };
      const [lag, throughput, backlog] = await Promise.all([
        // Lateness belongs to schedules, not queues: a queue filter leaves it whole.
        historyLagPerMinute(deps.pool, range),
        historyThroughputPerMinute(deps.pool, { ...range, queue: q.queue }),
        historyBacklogPerMinute(deps.pool, { ...range, queue: q.queue }),
      ]);
      return {
        from: from.toISOString(),
        to: to.toISOString(),
        lag: lag.map((m) => ({
          at: m.at.toISOString(),
          count: m.count,
          p50Ms: m.p50S * 1000,
          p99Ms: m.p99S * 1000,
          exact: m.exact,
        })),
        throughput: throughput.map((m) => ({
          at: m.at.toISOString(),
          succeeded: m.succeeded,
          failed: m.failed,
        })),
        backlog: backlog.map((m) => ({ at: m.at.toISOString(), waiting: m.waiting })),
      };
    },
  );
}
