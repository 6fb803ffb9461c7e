/**
 * The worker pull API, for workers in any language: claim a batch, heartbeat with progress,
 * complete, fail. Same leases and ownership as the TypeScript worker (src/push/remote-worker.ts):
 * a write for an attempt the caller no longer owns answers 409 and changes nothing, and the worker
 * must then abandon that attempt.
 *
 * Claiming takes jobs of every tenant, so it needs an admin token. Heartbeat, complete and fail
 * accept a tenant token for that tenant's jobs, so a push target can report progress of its own job.
 */
import { Type } from '@sinclair/typebox';
import { remoteClaim, remoteComplete, remoteFail, remoteHeartbeat } from '../../push/remote-worker.ts';
import type { Api } from '../app.ts';
import { requireAdmin } from '../auth.ts';
import { conflict } from '../errors.ts';
import { JobId, QueueName } from '../../contract/fields.ts';
import { withErrors } from '../schemas.ts';
import type { RouteDeps } from '../server.ts';
import { jobForCaller } from './jobs.ts';

const Owner = Type.String({
  minLength: 1,
  maxLength: 200,
  description: "the worker's id; every later write for a claimed attempt must name it",
});
const LeaseMs = Type.Integer({
  minimum: 1000,
  maximum: 3_600_000,
  description: 'lease length; heartbeat well within it or the job is reaped and retried elsewhere',
});
const DEFAULT_LEASE_MS = 30_000;

const Claimed = Type.Object({
  id: Type.Integer(),
  attempt: Type.Integer(),
  queue: Type.String(),
  kind: Type.String(),
  tenantId: Type.String(),
  payload: Type.Unknown(),
  maxAttempts: Type.Integer(),
  timeoutMs: Type.Union([Type.Integer(), Type.Null()]),
  heartbeatMs: Type.Union([Type.Integer(), Type.Null()]),
  idempotencyKey: Type.String(),
  deadline: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});

const AttemptBody = { worker: Owner, attempt: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }) };

function lost(id: number, attempt: number): Error {
  return conflict(
    `job ${id} attempt ${attempt} is not running under this worker (lease lost, cancelled or finished)`,
  );
}

export function workerRoutes(app: Api, deps: RouteDeps): void {
  const { pool } = deps;

  app.post(
    '/v1/workers/claim',
    {
      schema: {
        operationId: 'claimJobs',
        summary: 'Claim up to `limit` available jobs from these queues (admin token)',
        tags: ['workers'],
        body: Type.Object(
          {
            worker: Owner,
            queues: Type.Array(QueueName, { minItems: 1, maxItems: 50, uniqueItems: true }),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 10 })),
            leaseMs: Type.Optional(LeaseMs),
            cursors: Type.Optional(
              Type.Record(Type.String({ maxLength: 128 }), Type.String({ maxLength: 63 }), {
                description:
                  'the `cursors` of the previous answer: keeps tenants rotating fairly across claims',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        response: withErrors(
          {
            200: Type.Object({
              jobs: Type.Array(Claimed),
              cursors: Type.Record(Type.String(), Type.String()),
            }),
          },
          [400, 401, 403, 429],
        ),
      },
    },
    async (request) => {
      requireAdmin(request);
      const b = request.body;
      const now = deps.clock.now().getTime();
      const { jobs, cursors } = await remoteClaim(pool, {
        owner: b.worker,
        queues: b.queues,
        limit: b.limit ?? 10,
        leaseMs: b.leaseMs ?? DEFAULT_LEASE_MS,
        cursors: b.cursors,
      });
      return {
        cursors,
        jobs: jobs.map((j) => ({
          id: j.id,
          attempt: j.attempt,
          queue: j.queue,
          kind: j.kind,
          tenantId: j.tenantId,
          payload: j.payload,
          maxAttempts: j.maxAttempts,
          timeoutMs: j.timeoutMs,
          heartbeatMs: j.heartbeatMs,
          idempotencyKey: j.idempotencyKey,
          deadline: j.timeoutMs === null ? null : new Date(now + j.timeoutMs).toISOString(),
        })),
      };
    },
  );

  const Params = Type.Object({ id: JobId });

  app.post(
    '/v1/jobs/:id/heartbeat',
    {
      schema: {
        operationId: 'heartbeatJob',
        summary: "Extend a running attempt's lease and record progress",
        description:
          "Without `worker` and `attempt`, heartbeats the job's current attempt whoever runs it: for push targets, which know only their job id.",
        tags: ['workers'],
        params: Params,
        body: Type.Optional(
          Type.Object(
            {
              worker: Type.Optional(Owner),
              attempt: Type.Optional(AttemptBody.attempt),
              progress: Type.Optional(Type.Unknown()),
              leaseMs: Type.Optional(LeaseMs),
            },
            { additionalProperties: false },
          ),
        ),
        response: withErrors({
          200: Type.Object({ cancelRequested: Type.Boolean() }),
          409: Type.Ref('Error'),
        }),
      },
    },
    async (request) => {
      const job = await jobForCaller(pool, request, request.params.id);
      const owner = request.body?.worker ?? job.leaseOwner;
      const attempt = request.body?.attempt ?? job.attempt;
      if (owner === null || job.state !== 'running') throw lost(job.id, attempt);
      const renewed = await remoteHeartbeat(
        pool,
        owner,
        { id: job.id, attempt },
        request.body?.leaseMs ?? DEFAULT_LEASE_MS,
        request.body?.progress,
      );
      if (renewed === undefined) throw lost(job.id, attempt);
      return { cancelRequested: renewed.cancelRequested };
    },
  );

  app.post(
    '/v1/jobs/:id/complete',
    {
      schema: {
        operationId: 'completeJob',
        summary: 'Record a claimed attempt as succeeded',
        tags: ['workers'],
        params: Params,
        body: Type.Object(AttemptBody, { additionalProperties: false }),
        response: withErrors({
          200: Type.Object({ state: Type.Literal('succeeded') }),
          409: Type.Ref('Error'),
        }),
      },
    },
    async (request) => {
      await jobForCaller(pool, request, request.params.id);
      const ref = { id: request.params.id, attempt: request.body.attempt };
      if (!(await remoteComplete(pool, request.body.worker, ref))) throw lost(ref.id, ref.attempt);
      return { state: 'succeeded' as const };
    },
  );

  app.post(
    '/v1/jobs/:id/fail',
    {
      schema: {
        operationId: 'failJob',
        summary: 'Record a claimed attempt as failed: retried with backoff, or dead when out of attempts',
        tags: ['workers'],
        params: Params,
        body: Type.Object(
          {
            ...AttemptBody,
            error: Type.String({ minLength: 1, maxLength: 10_000 }),
            retryable: Type.Optional(Type.Boolean({ default: true, description: 'false: dead at once' })),
            timedOut: Type.Optional(Type.Boolean({ description: 'the attempt hit its deadline' })),
          },
          { additionalProperties: false },
        ),
        response: withErrors({
          200: Type.Object({
            state: Type.String({ description: 'failed (a retry is due at runAt), dead or cancelled' }),
            runAt: Type.String({ format: 'date-time' }),
          }),
          409: Type.Ref('Error'),
        }),
      },
    },
    async (request) => {
      await jobForCaller(pool, request, request.params.id);
      const b = request.body;
      const ref = { id: request.params.id, attempt: b.attempt };
      const failed = await remoteFail(pool, b.worker, ref, {
        error: b.error,
        retryable: b.retryable ?? true,
        outcome: b.timedOut === true ? 'timed_out' : 'failed',
      });
      if (failed === undefined) throw lost(ref.id, ref.attempt);
      return { state: failed.state, runAt: failed.runAt.toISOString() };
    },
  );
}
