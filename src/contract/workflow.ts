/**
 * A workflow to submit: the one schema the client, `POST /v1/workflows` and `tidemark workflow
 * submit` check, with the same field paths and messages, and the node specs a body becomes (a node
 * with a `url` is a push job). The graph's own rules (unique ids, known dependencies, no cycle) are
 * src/workflow/definition.ts's, run after this.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { InputProblem } from '../input.ts';
import { PUSH_KIND, PUSH_QUEUE, pushPayload } from '../push/target.ts';
import type { NodeSpec, WorkflowSpec } from '../workflow/definition.ts';
import { compileChecker } from './check.ts';
import { Name, PositiveInt4, Priority, TenantId, targetFields } from './fields.ts';

export const MAX_WORKFLOW_NODES = 100_000;

export const WorkflowNodeSchema = Type.Object(
  {
    id: Name,
    type: Type.Optional(Type.Union([Type.Literal('job'), Type.Literal('signal')])),
    dependsOn: Type.Optional(Type.Array(Name, { maxItems: MAX_WORKFLOW_NODES })),
    ...targetFields('Tidemark POSTs the node payload here'),
    payload: Type.Optional(Type.Unknown()),
    priority: Type.Optional(Priority),
    retries: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
    timeoutMs: Type.Optional(PositiveInt4('job deadline, or how long a signal node waits')),
    signal: Type.Optional(Name),
    onTimeout: Type.Optional(Type.Union([Type.Literal('fail'), Type.Literal('default')])),
    default: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: false },
);

export const WorkflowSubmitSchema = Type.Object(
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
    nodes: Type.Array(WorkflowNodeSchema, { minItems: 1, maxItems: MAX_WORKFLOW_NODES }),
  },
  { additionalProperties: false },
);
/** A workflow as the API receives it. */
export type WorkflowBody = Static<typeof WorkflowSubmitSchema>;
type NodeBody = Static<typeof WorkflowNodeSchema>;

const submitChecker = compileChecker(WorkflowSubmitSchema);

function nodeSpecOf(n: NodeBody): NodeSpec {
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
    kind: push ? PUSH_KIND : n.kind,
    payload: push ? pushPayload(n.url ?? '', n.payload) : n.payload,
    priority: n.priority,
    retries: n.retries,
    timeoutMs: n.timeoutMs,
    dependsOn: n.dependsOn,
  };
}

/**
 * The workflow's problems against the schema at `at` ('' in the client, `body` in the API), or
 * the spec it becomes, its url nodes made push jobs.
 */
export function workflowChecked(input: unknown, at: string): WorkflowSpec | InputProblem[] {
  if (!submitChecker.check(input)) return submitChecker.problems(input, at);
  const problems: InputProblem[] = [];
  input.nodes.forEach((n, i) => {
    if (n.url !== undefined && n.kind !== undefined)
      problems.push({
        field: `${at === '' ? '' : `${at}.`}nodes.${i}.kind`,
        reason: 'give kind (a handler) or url (a push target), not both',
      });
  });
  if (problems.length > 0) return problems;
  return { ...input, nodes: input.nodes.map(nodeSpecOf) };
}
