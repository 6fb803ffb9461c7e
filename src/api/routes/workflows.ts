/**
 * Workflows over the workflow client: submit a DAG (validated whole before anything is written),
 * status with counts, nodes page by page, cancel, resume, and signals.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { NodeSpec, WorkflowSpec } from '../../workflow/definition.ts';
import { WorkflowValidationError } from '../../workflow/definition.ts';
import {
  WorkflowClient,
  WorkflowNotFoundError,
  WorkflowSignalUndeclaredError,
} from '../../workflow/workflow-client.ts';
import type { WorkflowStatus } from '../../workflow/status.ts';
import { NodeState } from '../../store/workflow-nodes.ts';
import { WorkflowState } from '../../store/workflows.ts';
import { workflowNodeParents } from '../../store/workflow-graph.ts';
import { PUSH_KIND, PUSH_QUEUE, pushPayload } from '../../push/target.ts';
import type { Api } from '../app.ts';
import { tenantScope } from '../auth.ts';
import { ApiError, badRequest, conflict, notFound } from '../errors.ts';
import { Name, PageLimit, PositiveInt4, TenantId, targetFields, withErrors } from '../schemas.ts';
import type { RouteDeps } from '../server.ts';

/** A 100,000-node workflow is ~10–20 MB of JSON; every other route keeps the 1 MiB default. */
export const WORKFLOW_BODY_LIMIT = 64 * 1024 * 1024;

const Node = Type.Object(
  {
    id: Name,
    type: Type.Optional(Type.Union([Type.Literal('job'), Type.Literal('signal')])),
    dependsOn: Type.Optional(Type.Array(Name, { maxItems: 100_000 })),
    ...targetFields('Tidemark POSTs the node payload here'),
    payload: Type.Optional(Type.Unknown()),
    priority: Type.Optional(Type.Integer({ minimum: -1_000_000, maximum: 1_000_000 })),
    retries: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
    timeoutMs: Type.Optional(PositiveInt4('job deadline, or how long a signal node waits')),
    signal: Type.Optional(Name),
    onTimeout: Type.Optional(Type.Union([Type.Literal('fail'), Type.Literal('default')])),
    default: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: false },
);

const SubmitBody = Type.Object(
  {
    id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description: 'submitting the same id and definition again is a no-op',
      }),
    ),
    name: Type.Optional(Name),
    tenantId: Type.Optional(TenantId),
    failurePolicy: Type.Optional(Type.Union([Type.Literal('fail_fast'), Type.Literal('continue')])),
    nodes: Type.Array(Node, { minItems: 1, maxItems: 100_000 }),
  },
  { additionalProperties: false },
);

const IdParams = Type.Object({ id: Name });

const NodeItem = Type.Object({
  key: Type.String(),
  type: Type.Union([Type.Literal('job'), Type.Literal('signal')]),
  state: Type.String(),
  dependsOn: Type.Array(Type.String(), { description: 'keys of the nodes this one waits for' }),
  pendingDeps: Type.Integer(),
  jobId: Type.Union([Type.Integer(), Type.Null()]),
  jobState: Type.Union([Type.String(), Type.Null()]),
  attempt: Type.Union([Type.Integer(), Type.Null()]),
  runs: Type.Integer(),
  error: Type.Union([Type.String(), Type.Null()], {
    description: "the node's error, else its current job's last error",
  }),
  releasedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  startedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  finishedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});

function nodeSpec(n: Static<typeof Node>, i: number): NodeSpec {
  if (n.url !== undefined && n.kind !== undefined) {
    throw badRequest([
      { field: `body.nodes.${i}.kind`, reason: 'give kind (a handler) or url (a push target), not both' },
    ]);
  }
  if (n.type === 'signal' || n.signal !== undefined) {
    return {
      id: n.id,
      type: 'signal',
      signal: n.signal ?? '',
      timeoutMs: n.timeoutMs,
      onTimeout: n.onTimeout,
      default: n.default,
      dependsOn: n.dependsOn,
    };
  }
  const push = n.url !== undefined;
  return {
    id: n.id,
    type: 'job',
    queue: n.queue ?? (push ? PUSH_QUEUE : undefined),
    kind: push ? PUSH_KIND : (n.kind ?? ''),
    payload: push ? pushPayload(n.url ?? '', n.payload) : n.payload,
    priority: n.priority,
    retries: n.retries,
    timeoutMs: n.timeoutMs,
    dependsOn: n.dependsOn,
  };
}

/** `nodes[3].kind` (the validator's naming) → `body.nodes.3.kind` (the API's). */
function bodyField(field: string): string {
  return `body.${field.replace(/\[(\d+)\]/g, '.$1')}`;
}

const WorkflowSummarySchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  tenantId: Type.String(),
  state: Type.String(),
  failurePolicy: Type.String(),
  nodeCount: Type.Integer(),
  unfinished: Type.Integer({ description: 'nodes not yet succeeded, failed, skipped or cancelled' }),
  failedNodes: Type.Integer(),
  generation: Type.Integer({ description: 'resumes so far + 1' }),
  error: Type.Union([Type.String(), Type.Null()]),
  startedAt: Type.String({ format: 'date-time' }),
  finishedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});

function statusJson(s: WorkflowStatus) {
  return {
    ...s,
    startedAt: s.startedAt.toISOString(),
    finishedAt: s.finishedAt?.toISOString() ?? null,
    criticalPath: s.criticalPath.map((p) => ({
      node: p.node,
      releasedAt: p.releasedAt?.toISOString() ?? null,
      startedAt: p.startedAt?.toISOString() ?? null,
      finishedAt: p.finishedAt?.toISOString() ?? null,
    })),
  };
}

export function workflowRoutes(app: Api, deps: RouteDeps): void {
  const workflows = new WorkflowClient(deps.pool);

  async function forCaller(request: FastifyRequest, id: string): Promise<WorkflowStatus> {
    const tenant = tenantScope(request, undefined);
    try {
      const status = await workflows.status(id);
      if (tenant !== undefined && status.tenantId !== tenant) throw notFound(`workflow ${id}`);
      return status;
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) throw notFound(`workflow ${id}`);
      throw error;
    }
  }

  app.post(
    '/v1/workflows',
    {
      bodyLimit: WORKFLOW_BODY_LIMIT,
      schema: {
        operationId: 'submitWorkflow',
        summary: 'Submit a workflow (a DAG of job and signal nodes, up to 100,000)',
        tags: ['workflows'],
        body: SubmitBody,
        response: withErrors({
          200: Type.Object({
            id: Type.String(),
            created: Type.Boolean(),
            nodes: Type.Integer(),
            edges: Type.Integer(),
          }),
          201: Type.Object({
            id: Type.String(),
            created: Type.Boolean(),
            nodes: Type.Integer(),
            edges: Type.Integer(),
          }),
          409: Type.Ref('Error'),
        }),
      },
    },
    async (request, reply) => {
      const b = request.body;
      const spec: WorkflowSpec = {
        id: b.id,
        name: b.name,
        tenantId: tenantScope(request, b.tenantId) ?? 'default',
        failurePolicy: b.failurePolicy,
        nodes: b.nodes.map(nodeSpec),
      };
      try {
        const result = await workflows.submit(spec);
        return await reply.status(result.created ? 201 : 200).send(result);
      } catch (error) {
        if (error instanceof WorkflowValidationError) {
          // The id is global: one already taken (by this tenant with another definition, or by any
          // other tenant) is the same conflict either way, and names no one.
          if (error.field === 'id')
            throw conflict(`workflow id ${b.id ?? ''} is already in use with another definition`);
          throw badRequest(
            [{ field: bodyField(error.field), reason: error.message.slice(error.field.length + 2) }],
            { cause: error },
          );
        }
        throw error;
      }
    },
  );

  app.get(
    '/v1/workflows',
    {
      schema: {
        operationId: 'listWorkflows',
        summary: 'List workflows, newest first, filtered by tenant and state, page by page',
        tags: ['workflows'],
        querystring: Type.Object(
          {
            tenantId: Type.Optional(TenantId),
            state: Type.Optional(Type.Union(Object.values(WorkflowState).map((s) => Type.Literal(s)))),
            after: Type.Optional(
              Type.String({ maxLength: 600, description: 'cursor from the previous page (`next`)' }),
            ),
            limit: Type.Optional(PageLimit),
          },
          { additionalProperties: false },
        ),
        response: withErrors({
          200: Type.Object({
            items: Type.Array(WorkflowSummarySchema),
            next: Type.Union([Type.String(), Type.Null()]),
          }),
        }),
      },
    },
    async (request) => {
      const q = request.query;
      try {
        const page = await workflows.list({
          tenantId: tenantScope(request, q.tenantId),
          state: q.state,
          after: q.after,
          limit: q.limit,
        });
        return {
          next: page.next,
          items: page.items.map((w) => ({
            ...w,
            startedAt: w.startedAt.toISOString(),
            finishedAt: w.finishedAt?.toISOString() ?? null,
          })),
        };
      } catch (error) {
        if (error instanceof WorkflowValidationError) {
          throw badRequest(
            [{ field: `query.${error.field}`, reason: error.message.slice(error.field.length + 2) }],
            { cause: error },
          );
        }
        throw error;
      }
    },
  );

  app.get(
    '/v1/workflows/:id',
    {
      schema: {
        operationId: 'getWorkflow',
        summary: 'Workflow status: state, node counts per state, critical path so far',
        tags: ['workflows'],
        params: IdParams,
        response: withErrors({
          200: Type.Object(
            {
              id: Type.String(),
              state: Type.String(),
              nodeCount: Type.Integer(),
              nodes: Type.Record(Type.String(), Type.Integer()),
            },
            { additionalProperties: true },
          ),
        }),
      },
    },
    async (request) => statusJson(await forCaller(request, request.params.id)),
  );

  app.get(
    '/v1/workflows/:id/nodes',
    {
      schema: {
        operationId: 'listWorkflowNodes',
        summary: 'Nodes of a workflow with their dependencies and last error, by key, page by page',
        tags: ['workflows'],
        params: IdParams,
        querystring: Type.Object(
          {
            after: Type.Optional(Name),
            state: Type.Optional(Type.Union(Object.values(NodeState).map((s) => Type.Literal(s)))),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, default: 1000 })),
          },
          { additionalProperties: false },
        ),
        response: withErrors({
          200: Type.Object({
            items: Type.Array(NodeItem),
            next: Type.Union([Type.String(), Type.Null()]),
          }),
        }),
      },
    },
    async (request) => {
      await forCaller(request, request.params.id);
      const q = request.query;
      const page = await workflows.nodes(request.params.id, {
        after: q.after,
        state: q.state,
        limit: q.limit,
      });
      const parents = await workflowNodeParents(
        deps.pool,
        request.params.id,
        page.nodes.map((n) => n.key),
      );
      return {
        next: page.next,
        items: page.nodes.map((n) => ({
          key: n.key,
          type: n.type,
          state: n.state,
          dependsOn: parents.get(n.key) ?? [],
          pendingDeps: n.pending_deps,
          jobId: n.job_id,
          jobState: n.job_state,
          attempt: n.attempt,
          runs: n.runs,
          error: n.error,
          releasedAt: n.released_at?.toISOString() ?? null,
          startedAt: n.started_at?.toISOString() ?? null,
          finishedAt: n.finished_at?.toISOString() ?? null,
        })),
      };
    },
  );

  for (const action of ['cancel', 'resume'] as const) {
    app.post(
      `/v1/workflows/:id/${action}`,
      {
        schema: {
          operationId: `${action}Workflow`,
          summary:
            action === 'cancel'
              ? 'Cancel a running workflow: nothing new starts, running nodes finish'
              : 'Resume a failed or cancelled workflow: only unfinished nodes run again',
          tags: ['workflows'],
          params: IdParams,
          response: withErrors({ 200: Type.Object({ changed: Type.Boolean(), state: Type.String() }) }),
        },
      },
      async (request) => {
        await forCaller(request, request.params.id);
        const changed = await workflows[action](request.params.id);
        const status = await forCaller(request, request.params.id);
        return { changed, state: status.state };
      },
    );
  }

  app.post(
    '/v1/workflows/:id/signals/:name',
    {
      schema: {
        operationId: 'signalWorkflow',
        summary:
          'Send a signal: completes the signal nodes waiting for this name (once per name); 404 signal_not_declared when no node declares it',
        tags: ['workflows'],
        params: Type.Object({
          id: IdParams.properties.id,
          name: Name,
        }),
        body: Type.Optional(
          Type.Object({ payload: Type.Optional(Type.Unknown()) }, { additionalProperties: false }),
        ),
        response: withErrors({ 200: Type.Object({ accepted: Type.Boolean(), completed: Type.Integer() }) }),
      },
    },
    async (request) => {
      await forCaller(request, request.params.id);
      try {
        return await workflows.signal(request.params.id, request.params.name, request.body?.payload);
      } catch (error) {
        // 404, not 409: the name is part of the URL and no state of the workflow would ever make it
        // valid (its nodes are fixed at submit), so it is a resource that does not exist.
        if (error instanceof WorkflowSignalUndeclaredError) {
          throw new ApiError(404, 'signal_not_declared', error.message, [
            { field: 'params.name', reason: error.message },
          ]);
        }
        throw error;
      }
    },
  );
}
