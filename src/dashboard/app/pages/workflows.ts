/// <reference lib="dom" />
/**
 * Workflows: the newest first, filtered by state (and tenant, for an admin), or one opened by id; a
 * workflow's state, node counts per state, failed nodes with their errors; cancel and resume; and a
 * graph for workflows of up to GRAPH_MAX nodes, counts only beyond.
 */
import { ApiError, get, post, query } from '../api.ts';
import { badge, h, notice, show, table } from '../dom.ts';
import { ago, local, utc } from '../format.ts';
import { GRAPH_MAX, workflowGraph } from '../graph.ts';
import { choice, filterForm, tenantChoice } from '../filters.ts';
import { errorText, missingRoutes, poll, type PageContext } from '../page.ts';
import type { Page, WorkflowNode, WorkflowStatus, WorkflowSummary } from '../types.ts';

const ROUTES = ['GET /v1/workflows', 'GET /v1/workflows/{id}', 'GET /v1/workflows/{id}/nodes'];
const POLL_MS = 3000;
const NODE_PAGE = 1000;
const LIST_PAGE = 50;
const STATES = ['running', 'succeeded', 'failed', 'cancelled'];

const TONE: Record<string, string> = { running: 'info', succeeded: 'ok', failed: 'bad', cancelled: 'muted' };

interface NodePage {
  items: WorkflowNode[];
  next: string | null;
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
  const filters = {
    state: ctx.query.get('state') ?? '',
    tenantId: ctx.query.get('tenantId') ?? '',
    after: ctx.query.get('after') ?? '',
  };
  const status = h('div', { class: 'status-line' });
  const list = h('div');
  show(ctx.main, h('h1', {}, 'Workflows'), openForm(), workflowFilters(ctx, filters), status, list);
  const refresh = async (): Promise<void> => {
    const page = await get<Page<WorkflowSummary>>(
      `/v1/workflows${query({ ...filters, tenantId: ctx.session.admin ? filters.tenantId : undefined, limit: LIST_PAGE })}`,
      ctx.signal,
    );
    const now = Date.now();
    show(
      list,
      page.items.length === 0
        ? notice(filters.after === '' ? 'No workflows match.' : 'No older workflows.')
        : table(
            'Workflows, newest first',
            ['Workflow', 'Tenant', 'State', 'Nodes finished', 'Failed nodes', 'Started', 'Finished'],
            page.items.map((w) => [
              h('a', { href: `#/workflows/${encodeURIComponent(w.id)}` }, w.name === '' ? w.id : w.name),
              w.tenantId,
              badge(w.state, TONE[w.state] ?? 'muted'),
              `${w.nodeCount - w.unfinished} / ${w.nodeCount}`,
              String(w.failedNodes),
              h('time', { datetime: w.startedAt, title: local(w.startedAt) }, ago(w.startedAt, now)),
              w.finishedAt === null
                ? ''
                : h('time', { datetime: w.finishedAt, title: local(w.finishedAt) }, ago(w.finishedAt, now)),
            ]),
            { class: 'workflows' },
          ),
      page.next === null
        ? null
        : h(
            'p',
            {},
            h(
              'a',
              {
                href: `#/workflows${query({ state: filters.state, tenantId: filters.tenantId, after: String(page.next) })}`,
              },
              'Older workflows →',
            ),
          ),
    );
  };
  poll(ctx, POLL_MS, status, refresh);
  await Promise.resolve();
}

function openForm(): HTMLElement {
  const input = h('input', { id: 'wf-id', name: 'id', required: true, autocomplete: 'off', maxlength: 200 });
  return h(
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
  );
}

function workflowFilters(ctx: PageContext, f: { state: string; tenantId: string }): HTMLElement {
  const state = choice('wf-state', 'state', 'any', STATES, f.state);
  const tenant = tenantChoice(ctx, 'wf-tenant', f.tenantId);
  return filterForm(
    'Filter workflows',
    [
      ['State', state],
      ['Tenant', tenant],
    ],
    () => {
      location.hash = `#/workflows${query({ state: state.value, tenantId: tenant?.value })}`;
    },
  );
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
