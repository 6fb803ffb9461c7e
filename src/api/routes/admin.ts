/**
 * Administration (admin tokens only): API tokens, tenants and their quotas, queue settings, pause and
 * resume with their audit, and the worker registry.
 */
import { Type } from '@sinclair/typebox';
import { tenantExists, tenantGet, tenantList, tenantUpsert } from '../../store/tenants.ts';
import { tokenList, tokenRevoke } from '../../store/tokens.ts';
import { Tenant, tenantJson, Token, tokenJson } from '../admin-json.ts';
import type { Api } from '../app.ts';
import { requireAdmin, type Principal } from '../auth.ts';
import { badRequest, notFound } from '../errors.ts';
import { Name, PageLimit, PositiveInt4, QueueName, TenantId, Uuid, withErrors } from '../schemas.ts';
import type { RouteDeps } from '../server.ts';
import { tokenMint } from '../tokens.ts';
import { QueueClient, queueSettingsApply, type Queue } from '../../worker/queue-client.ts';
import { QueueInputError, QueueSettingsSchema } from '../../worker/queue-settings.ts';
import { WorkerRegistryClient, type WorkerInfo } from '../../worker/registry-client.ts';

const ADMIN_ERRORS = [400, 401, 403, 404, 429];

const IsoOrNull = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);

const QueueJson = Type.Object({
  name: Type.String(),
  maxRunning: Type.Union([Type.Integer(), Type.Null()]),
  maxAttempts: Type.Integer(),
  backoffBaseMs: Type.Integer(),
  backoffMaxMs: Type.Integer(),
  timeoutMs: Type.Union([Type.Integer(), Type.Null()]),
  configured: Type.Boolean({ description: 'false: the queue has no row and runs under these defaults' }),
  paused: Type.Boolean({ description: 'true: every claim skips the queue; running jobs finish' }),
  pausedAt: IsoOrNull,
  pausedBy: Type.Union([Type.String(), Type.Null()]),
});

function queueJson(q: Queue) {
  return { ...q, pausedAt: q.pausedAt?.toISOString() ?? null };
}

const QueueSnapshotJson = Type.Object({
  maxRunning: Type.Union([Type.Integer(), Type.Null()]),
  maxAttempts: Type.Integer(),
  backoffBaseMs: Type.Integer(),
  backoffMaxMs: Type.Integer(),
  timeoutMs: Type.Union([Type.Integer(), Type.Null()]),
  paused: Type.Boolean(),
});

const QueueChangeJson = Type.Object({
  at: Type.String({ format: 'date-time' }),
  by: Type.String({
    description: 'token <name> (<id>) through the API; the caller given to the library or CLI',
  }),
  change: Type.Union([Type.Literal('pause'), Type.Literal('resume'), Type.Literal('update')]),
  before: QueueSnapshotJson,
  after: QueueSnapshotJson,
});

const WorkerJson = Type.Object({
  id: Type.String(),
  host: Type.String(),
  pid: Type.Integer(),
  version: Type.String(),
  startedAt: Type.String({ format: 'date-time' }),
  heartbeatAt: Type.String({ format: 'date-time' }),
  stoppedAt: IsoOrNull,
  state: Type.Union([Type.Literal('running'), Type.Literal('stopped'), Type.Literal('lost')], {
    description: 'lost: no heartbeat for three of its intervals, without a clean stop',
  }),
  queues: Type.Array(
    Type.Object({
      name: Type.String(),
      concurrency: Type.Integer(),
      running: Type.Integer({ description: 'slots in use at the last heartbeat' }),
    }),
  ),
  running: Type.Array(
    Type.Object({
      jobId: Type.Integer(),
      queue: Type.String(),
      kind: Type.String(),
      tenantId: Type.String(),
      startedAt: Type.String({ format: 'date-time' }),
      progress: Type.Unknown(),
    }),
    { description: 'jobs leased to this worker now, claimed-ahead ones waiting for a slot included' },
  ),
});

function workerJson(w: WorkerInfo) {
  return {
    ...w,
    startedAt: w.startedAt.toISOString(),
    heartbeatAt: w.heartbeatAt.toISOString(),
    stoppedAt: w.stoppedAt?.toISOString() ?? null,
    running: w.running.map((j) => ({ ...j, startedAt: j.startedAt.toISOString() })),
  };
}

/** Who a request's change is recorded as. */
function changedBy(principal: Principal): string {
  return `token ${principal.tokenName} (${principal.tokenId})`;
}

/** The library's refusal of a value the route's schema let through (a merged check) as a 400. */
async function queueInput<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof QueueInputError) {
      throw badRequest([{ field: `body.${error.field.replace(/^settings\./, '')}`, reason: error.reason }]);
    }
    throw error;
  }
}

const Nullable = <T extends ReturnType<typeof PositiveInt4>>(t: T) => Type.Union([t, Type.Null()]);

export function adminRoutes(app: Api, deps: RouteDeps): void {
  const { pool } = deps;

  app.post(
    '/v1/tokens',
    {
      schema: {
        operationId: 'createToken',
        summary: 'Create an API token (shown once)',
        tags: ['admin'],
        body: Type.Object(
          {
            name: Name,
            tenantId: Type.Optional(
              Type.Union([TenantId, Type.Null()], { description: 'null or absent: an admin token' }),
            ),
            ratePerS: Type.Optional(
              Nullable(PositiveInt4('requests per second; null for the server default')),
            ),
          },
          { additionalProperties: false },
        ),
        response: withErrors(
          { 201: Type.Composite([Token, Type.Object({ token: Type.String() })]) },
          ADMIN_ERRORS,
        ),
      },
    },
    async (request, reply) => {
      requireAdmin(request);
      const { name, tenantId = null, ratePerS = null } = request.body;
      if (tenantId !== null && !(await tenantExists(pool, tenantId))) {
        throw badRequest([{ field: 'body.tenantId', reason: `no tenant ${tenantId}` }]);
      }
      const minted = await tokenMint(pool, { tenantId, name, ratePerS });
      return await reply.status(201).send({ ...tokenJson(minted.row), token: minted.token });
    },
  );

  app.get(
    '/v1/tokens',
    {
      schema: {
        operationId: 'listTokens',
        summary: 'List active tokens (never their secrets)',
        tags: ['admin'],
        querystring: Type.Object({ tenantId: Type.Optional(TenantId) }, { additionalProperties: false }),
        response: withErrors({ 200: Type.Object({ items: Type.Array(Token) }) }, ADMIN_ERRORS),
      },
    },
    async (request) => {
      requireAdmin(request);
      const filter = request.query.tenantId === undefined ? {} : { tenantId: request.query.tenantId };
      return { items: (await tokenList(pool, filter)).map(tokenJson) };
    },
  );

  app.delete(
    '/v1/tokens/:id',
    {
      schema: {
        operationId: 'revokeToken',
        summary: 'Revoke a token; it stops working at once on every replica',
        tags: ['admin'],
        params: Type.Object({ id: Uuid }),
        response: withErrors({ 200: Token }, ADMIN_ERRORS),
      },
    },
    async (request) => {
      requireAdmin(request);
      const row = await tokenRevoke(pool, request.params.id);
      if (row === undefined) throw notFound(`token ${request.params.id}`);
      deps.limiter.forget(row.id);
      return tokenJson(row);
    },
  );

  app.get(
    '/v1/tenants',
    {
      schema: {
        operationId: 'listTenants',
        summary: 'List tenants',
        tags: ['admin'],
        response: withErrors({ 200: Type.Object({ items: Type.Array(Tenant) }) }, ADMIN_ERRORS),
      },
    },
    async (request) => {
      requireAdmin(request);
      return { items: (await tenantList(pool)).map(tenantJson) };
    },
  );

  app.get(
    '/v1/tenants/:id',
    {
      schema: {
        operationId: 'getTenant',
        summary: 'Show a tenant',
        tags: ['admin'],
        params: Type.Object({ id: TenantId }),
        response: withErrors({ 200: Tenant }, ADMIN_ERRORS),
      },
    },
    async (request) => {
      requireAdmin(request);
      const row = await tenantGet(pool, request.params.id);
      if (row === undefined) throw notFound(`tenant ${request.params.id}`);
      return tenantJson(row);
    },
  );

  app.put(
    '/v1/tenants/:id',
    {
      schema: {
        operationId: 'putTenant',
        summary: 'Create a tenant or replace its name and quota',
        tags: ['admin'],
        params: Type.Object({ id: TenantId }),
        body: Type.Object(
          {
            name: Name,
            maxRunning: Type.Optional(Nullable(PositiveInt4('cluster-wide cap on running jobs; null: none'))),
          },
          { additionalProperties: false },
        ),
        response: withErrors({ 200: Tenant, 201: Tenant }, ADMIN_ERRORS),
      },
    },
    async (request, reply) => {
      requireAdmin(request);
      const { row, created } = await tenantUpsert(pool, {
        id: request.params.id,
        name: request.body.name,
        maxRunning: request.body.maxRunning ?? null,
      });
      return await reply.status(created ? 201 : 200).send(tenantJson(row));
    },
  );

  const queues = new QueueClient(pool);
  const workers = new WorkerRegistryClient(pool);

  app.get(
    '/v1/queues',
    {
      schema: {
        operationId: 'listQueues',
        summary: 'List configured queues',
        tags: ['admin'],
        response: withErrors({ 200: Type.Object({ items: Type.Array(QueueJson) }) }, ADMIN_ERRORS),
      },
    },
    async (request) => {
      requireAdmin(request);
      return { items: (await queues.list()).map(queueJson) };
    },
  );

  app.get(
    '/v1/queues/:name',
    {
      schema: {
        operationId: 'getQueue',
        summary: "Show a queue's settings (the defaults when it has none of its own)",
        tags: ['admin'],
        params: Type.Object({ name: QueueName }),
        response: withErrors({ 200: QueueJson }, ADMIN_ERRORS),
      },
    },
    async (request) => {
      requireAdmin(request);
      return queueJson(await queues.get(request.params.name));
    },
  );

  app.patch(
    '/v1/queues/:name',
    {
      schema: {
        operationId: 'updateQueue',
        summary:
          "Change a queue's concurrency limit, retry policy and timeout (fields left out keep their value); recorded in its changes",
        tags: ['admin'],
        params: Type.Object({ name: QueueName }),
        body: QueueSettingsSchema,
        response: withErrors({ 200: QueueJson, 201: QueueJson }, ADMIN_ERRORS),
      },
    },
    async (request, reply) => {
      const principal = requireAdmin(request);
      const { queue, created } = await queueInput(() =>
        queueSettingsApply(pool, request.params.name, request.body, changedBy(principal)),
      );
      return await reply.status(created ? 201 : 200).send(queueJson(queue));
    },
  );

  for (const action of ['pause', 'resume'] as const) {
    app.post(
      `/v1/queues/:name/${action}`,
      {
        schema: {
          operationId: action === 'pause' ? 'pauseQueue' : 'resumeQueue',
          summary:
            action === 'pause'
              ? 'Pause a queue cluster-wide: every claim skips it, running jobs finish (recorded in its changes)'
              : 'Resume a paused queue: workers claim from it again at once (recorded in its changes)',
          tags: ['admin'],
          params: Type.Object({ name: QueueName }),
          response: withErrors({ 200: QueueJson }, ADMIN_ERRORS),
        },
      },
      async (request) => {
        const by = changedBy(requireAdmin(request));
        const { name } = request.params;
        return queueJson(
          await (action === 'pause' ? queues.pause(name, { by }) : queues.resume(name, { by })),
        );
      },
    );
  }

  app.get(
    '/v1/queues/:name/changes',
    {
      schema: {
        operationId: 'listQueueChanges',
        summary: "A queue's pauses, resumes and settings changes, newest first: who, when, before and after",
        tags: ['admin'],
        params: Type.Object({ name: QueueName }),
        querystring: Type.Object({ limit: Type.Optional(PageLimit) }, { additionalProperties: false }),
        response: withErrors({ 200: Type.Object({ changes: Type.Array(QueueChangeJson) }) }, ADMIN_ERRORS),
      },
    },
    async (request) => {
      requireAdmin(request);
      const changes = await queues.changes(request.params.name, { limit: request.query.limit ?? 100 });
      return { changes: changes.map((c) => ({ ...c, at: c.at.toISOString() })) };
    },
  );

  app.get(
    '/v1/workers',
    {
      schema: {
        operationId: 'listWorkers',
        summary:
          'Worker processes (running, then lost, then stopped) with their slots per queue and the jobs each holds now',
        tags: ['admin'],
        response: withErrors({ 200: Type.Object({ workers: Type.Array(WorkerJson) }) }, ADMIN_ERRORS),
      },
    },
    async (request) => {
      requireAdmin(request);
      return { workers: (await workers.list()).map(workerJson) };
    },
  );
}
