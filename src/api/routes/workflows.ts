/**
 * Workflows over the workflow client: submit a DAG (validated whole before anything is written),
 * status with counts, nodes page by page, cancel, resume, and signals.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { WorkflowSpec } from '../../workflow/definition.ts';
import { WorkflowValidationError } from '../../workflow/definition.ts';
import { WorkflowSubmitSchema } from '../../contract/workflow.ts';
import { WorkflowClient, WorkflowSignalUndeclaredError } from '../../workflow/workflow-client.ts';
import type { WorkflowStatus } from '../../workflow/status.ts';
import { TIMELINE_PAGE_MAX, TIMELINE_PATH_MAX, type TimelineNode } from '../../workflow/timeline.ts';
import { NodeState } from '../../store/workflow-nodes.ts';
import { WorkflowState } from '../../store/workflows.ts';
import { workflowNodeParents } from '../../store/workflow-graph.ts';
import type { Api } from '../app.ts';
import { tenantScope } from '../auth.ts';
import { ApiError, badRequest, conflict, notFound } from '../errors.ts';
import { Name, PageLimit, TenantId } from '../../contract/fields.ts';
import { withErrors } from '../schemas.ts';
import type { RouteDeps } from '../server.ts';

/** A 100,000-node workflow is ~10–20 MB of JSON; every other route keeps the 1 MiB default. */
export const WORKFLOW_BODY_LIMIT = 64 * 1024 * 1024;

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

const TimelineNodeSchema = Type.Object({
  key: Type.String(),
  type: Type.Union([Type.Literal('job'), Type.Literal('signal')]),
  state: Type.String(),
  jobId: Type.Union([Type.Integer(), Type.Null()]),
  jobState: Type.Union([Type.String(), Type.Null()]),
  attempts: Type.Union([Type.Integer(), Type.Null()], { description: "attempts of the node's job so far" }),
  releasedBy: Type.Union([Type.String(), Type.Null()], {
    description: 'the dependency whose success released it: its parent that finished last',
  }),
  releasedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  startedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: "its job's first attempt's start (a signal node: when it began to wait)",
  }),
  finishedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: "its job's last attempt's end, once the node is finished",
  }),
  critical: Type.Boolean({ description: 'on the critical path' }),
});

function timelineNodeJson(n: TimelineNode) {
  return {
    ...n,
    releasedAt: n.releasedAt?.toISOString() ?? null,
    startedAt: n.startedAt?.toISOString() ?? null,
    finishedAt: n.finishedAt?.toISOString() ?? null,
  };
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
    const status = await workflows.status(id);
    if (status === null || (tenant !== undefined && status.tenantId !== tenant))
      throw notFound(`workflow ${id}`);
    return status;
  }

  app.post(
    '/v1/workflows',
    {
      bodyLimit: WORKFLOW_BODY_LIMIT,
      schema: {
        operationId: 'submitWorkflow',
        summary: 'Submit a workflow (a DAG of job and signal nodes, up to 100,000)',
        tags: ['workflows'],
        body: WorkflowSubmitSchema,
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
      const tenantId = tenantScope(request, b.tenantId) ?? 'default';
      try {
        // The body passed this route's schema, the client's own (src/contract/workflow.ts), which
        // the client checks again and whose nodes it turns into job and signal specs.
        const result = await workflows.submit({ ...b, tenantId } as WorkflowSpec);
        return await reply.status(result.created ? 201 : 200).send(result);
      } catch (error) {
        if (error instanceof WorkflowValidationError) {
          // The id is global: one already taken (by this tenant with another definition, or by any
          // other tenant) is the same conflict either way, and names no one.
          if (error.fields[0]?.field === 'id')
            throw conflict(`workflow id ${b.id ?? ''} is already in use with another definition`);
          throw badRequest(
            error.fields.map((f) => ({ field: `body.${f.field}`, reason: f.reason })),
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
            error.fields.map((f) => ({ field: `query.${f.field}`, reason: f.reason })),
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
          pendingDeps: n.pendingDeps,
          jobId: n.jobId,
          jobState: n.jobState,
          attempt: n.attempt,
          runs: n.runs,
          error: n.error,
          releasedAt: n.releasedAt?.toISOString() ?? null,
          startedAt: n.startedAt?.toISOString() ?? null,
          finishedAt: n.finishedAt?.toISOString() ?? null,
        })),
      };
    },
  );

  app.get(
    '/v1/workflows/:id/timeline',
    {
      schema: {
        operationId: 'getWorkflowTimeline',
        summary:
          "Each node's release, first start and last finish (from its job's attempts) for a page of nodes by key or a selection, and the critical path",
        tags: ['workflows'],
        params: IdParams,
        querystring: Type.Object(
          {
            after: Type.Optional(Name),
            limit: Type.Optional(
              Type.Integer({
                minimum: 0,
                maximum: TIMELINE_PAGE_MAX,
                default: 200,
                description: 'nodes per page; 0 for the critical path only',
              }),
            ),
            key: Type.Optional(
              Type.Union([Name, Type.Array(Name, { minItems: 1, maxItems: TIMELINE_PAGE_MAX })], {
                description: 'instead of a page, these nodes: repeat key= for each',
              }),
            ),
            pathLimit: Type.Optional(
              Type.Integer({
                minimum: 0,
                maximum: TIMELINE_PATH_MAX,
                default: TIMELINE_PATH_MAX,
                description: 'most nodes of the critical path, those nearest its end',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        response: withErrors({
          200: Type.Object({
            id: Type.String(),
            state: Type.String(),
            nodeCount: Type.Integer(),
            startedAt: Type.String({ format: 'date-time' }),
            finishedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
            criticalPath: Type.Array(TimelineNodeSchema, {
              description: 'root first: the chain of nodes whose ends decided the workflow’s end',
            }),
            criticalPathComplete: Type.Boolean({ description: 'whether the path reaches a root' }),
            items: Type.Array(TimelineNodeSchema),
            next: Type.Union([Type.String(), Type.Null()]),
          }),
        }),
      },
    },
    async (request) => {
      await forCaller(request, request.params.id);
      const q = request.query;
      const keys = q.key === undefined ? undefined : Array.isArray(q.key) ? q.key : [q.key];
      let t;
      try {
        t = await workflows.timeline(request.params.id, {
          after: q.after,
          limit: q.limit,
          keys,
          pathLimit: q.pathLimit,
        });
      } catch (error) {
        if (error instanceof WorkflowValidationError) {
          throw badRequest(
            error.fields.map((f) => ({
              field: `query.${f.field === 'keys' ? 'key' : f.field}`,
              reason: f.reason,
            })),
            { cause: error },
          );
        }
        throw error;
      }
      if (t === null) throw notFound(`workflow ${request.params.id}`);
      return {
        id: t.id,
        state: t.state,
        nodeCount: t.nodeCount,
        startedAt: t.startedAt.toISOString(),
        finishedAt: t.finishedAt?.toISOString() ?? null,
        criticalPath: t.criticalPath.map(timelineNodeJson),
        criticalPathComplete: t.criticalPathComplete,
        items: t.nodes.map(timelineNodeJson),
        next: t.next,
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
