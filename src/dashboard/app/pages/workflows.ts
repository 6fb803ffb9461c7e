/// <reference lib="dom" />
/**
 * Workflows: open one by id (the API has no listing of workflows; ids opened in this tab are kept
 * for one click back), see its state, node counts per state, failed nodes with their errors;
 * cancel and resume; and a graph for workflows of up to GRAPH_MAX nodes, counts only beyond.
 */
import { ApiError, get, post, query } from '../api.ts';
import { badge, h, notice, show, table } from '../dom.ts';
import { local, utc } from '../format.ts';
import { GRAPH_MAX, workflowGraph } from '../graph.ts';
import { errorText, missingRoutes, poll, type PageContext } from '../page.ts';
import type { WorkflowNode, WorkflowStatus } from '../types.ts';

const ROUTES = ['GET /v1/workflows/{id}', 'GET /v1/workflows/{id}/nodes'];
const RECENT_KEY = 'tidemark.recentWorkflows';
const POLL_MS = 3000;
const NODE_PAGE = 1000;

const TONE: Record<string, string> = { running: 'info', succeeded: 'ok', failed: 'bad', cancelled: 'muted' };

interface NodePage {
  items: WorkflowNode[];
  next: string | null;
}

function recent(): string[] {
  try {
    const v: unknown = JSON.parse(sessionStorage.getItem(RECENT_KEY) ?? '[]');
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

function remember(id: string): void {
  sessionStorage.setItem(RECENT_KEY, JSON.stringify([id, ...recent().filter((x) => x !== id)].slice(0, 10)));
}

export async function workflowsPage(ctx: PageContext): Promise<void> {
  const missing = missingRoutes(ctx, ROUTES);
  if (missing.length > 0) {
    show(
      ctx.main,
      h('h1', {}, 'Workflows'),
      notice(`This server has no workflow routes yet (${missing.join(', ')}).`, 'error'),
    );
    return;
  }
  if (ctx.params[0] !== undefined) return workflowPage(ctx, decodeURIComponent(ctx.params[0]));
  const input = h('input', { id: 'wf-id', name: 'id', required: true, autocomplete: 'off', maxlength: 200 });
  const seen = recent();
  show(
    ctx.main,
    h('h1', {}, 'Workflows'),
    h(
      'form',
      {
        class: 'filters',
        onsubmit: (event: Event) => {
          event.preventDefault();
          location.hash = `#/workflows/${encodeURIComponent(input.value.trim())}`;
        },
      },
      h('label', { for: 'wf-id' }, 'Workflow id'),
      input,
      h('button', { type: 'submit' }, 'Open'),
    ),
    seen.length === 0
      ? null
      : [
          h('h2', {}, 'Opened in this tab'),
          h(
            'ul',
            {},
            seen.map((id) => h('li', {}, h('a', { href: `#/workflows/${encodeURIComponent(id)}` }, id))),
          ),
        ],
  );
  await Promise.resolve();
}

async function nodesOf(
  ctx: PageContext,
  id: string,
  state: string | undefined,
  max: number,
): Promise<WorkflowNode[]> {
  const out: WorkflowNode[] = [];
  let after: string | null = null;
  do {
    const page: NodePage = await get<NodePage>(
      `/v1/workflows/${encodeURIComponent(id)}/nodes${query({ state, after: after ?? undefined, limit: Math.min(NODE_PAGE, max - out.length) })}`,
      ctx.signal,
    );
    out.push(...page.items);
    after = page.next;
  } while (after !== null && out.length < max);
  return out;
}

async function workflowPage(ctx: PageContext, id: string): Promise<void> {
  const status = h('div', { class: 'status-line', 'aria-live': 'polite' });
  const body = h('div');
  show(ctx.main, h('p', {}, h('a', { href: '#/workflows' }, '← Workflows')), status, body);
  const act = (action: 'cancel' | 'resume'): void => {
    post(`/v1/workflows/${encodeURIComponent(id)}/${action}`)
      .then(async () => {
        show(status, notice(action === 'cancel' ? 'Workflow cancelled.' : 'Workflow resumed.', 'ok'));
        await refresh();
      })
      .catch((error: unknown) => show(status, notice(errorText(error), 'error')));
  };
  const refresh = async (): Promise<void> => {
    let wf: WorkflowStatus;
    try {
      wf = await get<WorkflowStatus>(`/v1/workflows/${encodeURIComponent(id)}`, ctx.signal);
    } catch (error) {
      if (error instanceof ApiError && (error.status === 404 || error.status === 400)) {
        show(
          body,
          h('h1', {}, 'Workflow not found'),
          notice(`No workflow ${id} is visible to this token.`, 'error'),
        );
        return;
      }
      throw error;
    }
    remember(id);
    const failedCount = wf.nodes.failed ?? 0;
    const failed = failedCount > 0 ? await nodesOf(ctx, id, 'failed', 200) : [];
    const drawable = wf.nodeCount <= GRAPH_MAX;
    const all = drawable ? await nodesOf(ctx, id, undefined, GRAPH_MAX) : [];
    show(
      body,
      h('h1', {}, wf.name === '' ? wf.id : wf.name, ' ', badge(wf.state, TONE[wf.state] ?? 'muted')),
      h(
        'dl',
        { class: 'facts' },
        [
          ['Id', wf.id],
          ['Tenant', wf.tenantId],
          ['Nodes', String(wf.nodeCount)],
          ['Failure policy', wf.failurePolicy],
          ['Run', String(wf.generation)],
          ['Started', `${utc(wf.startedAt)} · ${local(wf.startedAt)}`],
          ['Finished', utc(wf.finishedAt)],
        ].flatMap(([k, v]) => [h('dt', {}, k ?? ''), h('dd', {}, v ?? '')]),
      ),
      wf.error === null ? null : [h('h2', {}, 'Error'), h('pre', { class: 'error-text' }, wf.error)],
      h(
        'div',
        { class: 'actions' },
        wf.state === 'running'
          ? h('button', { type: 'button', onclick: () => act('cancel') }, 'Cancel workflow')
          : null,
        wf.state === 'failed' || wf.state === 'cancelled'
          ? h('button', { type: 'button', onclick: () => act('resume') }, 'Resume workflow')
          : null,
      ),
      h('h2', {}, 'Nodes by state'),
      table(
        'Nodes per state',
        ['State', 'Nodes'],
        Object.entries(wf.nodes).map(([state, n]) => [state, String(n)]),
        { class: 'counts' },
      ),
      failedCount === 0
        ? null
        : [
            h('h2', {}, `Failed nodes (${failedCount})`),
            table(
              'Failed nodes',
              ['Node', 'Job', 'Runs', 'Error'],
              failed.map((n) => [
                n.key,
                n.jobId === null ? '—' : h('a', { href: `#/jobs/${n.jobId}` }, `#${n.jobId}`),
                String(n.runs),
                h('pre', { class: 'error-text' }, n.error ?? ''),
              ]),
              { class: 'failed-nodes' },
            ),
          ],
      h('h2', {}, 'Graph'),
      !drawable
        ? notice(
            `${wf.nodeCount} nodes: too many to draw (up to ${GRAPH_MAX}); the counts above are the view.`,
          )
        : workflowGraph(all),
    );
  };
  poll(ctx, POLL_MS, status, refresh);
  await Promise.resolve();
}
