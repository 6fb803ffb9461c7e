/// <reference lib="dom" />
/**
 * Workflows: the newest first, filtered by state (and tenant, for an admin), or one opened by id; a
 * workflow's state, node counts per state, failed nodes with their errors; cancel and resume; a
 * graph with a legend and nodes linked to their jobs, for workflows of up to GRAPH_MAX nodes; a
 * timeline (Gantt) of the nodes with the critical path highlighted; every node's times in a list
 * paged by key, so a workflow of 100,000 nodes costs one page of them (beyond GRAPH_MAX the graph and
 * the timeline are drawn for that page only, the timeline with the critical path added).
 */
import { ApiError, get, post, query } from '../api.ts';
import { confirmAction } from '../confirm.ts';
import { badge, h, notice, show, table, update } from '../dom.ts';
import { ago, duration, local, utc } from '../format.ts';
import { GRAPH_MAX, NODE_STATES, nodeLegend, nodeState, workflowGraph } from '../graph.ts';
import { gantt, timelineLegend } from '../timeline.ts';
import { choice, filterForm, tenantChoice } from '../filters.ts';
import { errorText, focusIfLost, missingRoutes, poll, type PageContext } from '../page.ts';
import type {
  Page,
  TimelineNode,
  WorkflowNode,
  WorkflowStatus,
  WorkflowSummary,
  WorkflowTimeline,
} from '../types.ts';

const ROUTES = ['GET /v1/workflows', 'GET /v1/workflows/{id}', 'GET /v1/workflows/{id}/nodes'];
const POLL_MS = 3000;
const NODE_PAGE = 1000;
/** Nodes per page of the node list. */
const NODE_LIST = 100;
const LIST_PAGE = 50;
const STATES = ['running', 'succeeded', 'failed', 'cancelled'];
/** Nodes of the critical path drawn on the timeline: the ones nearest its end. */
const PATH_DRAWN = 200;
/** A selection's keys in one timeline URL: well inside the server's 16 KB request line. */
const KEYS_URL_MAX = 8_000;

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
    // In place, rows matched by id: a focused link survives the 3 s poll.
    update(
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
            page.items.map((w) => w.id),
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

function nodeTimes(n: WorkflowNode, now: number): string {
  if (n.startedAt === null) return '—';
  return duration((n.finishedAt === null ? now : Date.parse(n.finishedAt)) - Date.parse(n.startedAt));
}

function nodeTable(nodes: WorkflowNode[], now: number): HTMLTableElement {
  return table(
    'Nodes with their times',
    ['Node', 'State', 'Job', 'Released (UTC)', 'Started (UTC)', 'Finished (UTC)', 'Ran', 'Runs'],
    nodes.map((n) => [
      n.key,
      badge(nodeState(n), NODE_TONE[nodeState(n)] ?? 'muted'),
      n.jobId === null ? '—' : h('a', { href: `#/jobs/${n.jobId}` }, `#${n.jobId}`),
      utc(n.releasedAt),
      utc(n.startedAt),
      utc(n.finishedAt),
      nodeTimes(n, now),
      String(n.runs),
    ]),
    { class: 'nodes' },
    nodes.map((n) => n.key),
  );
}

const NODE_TONE: Record<string, string> = {
  running: 'info',
  queued: 'info',
  succeeded: 'ok',
  failed: 'bad',
  skipped: 'warn',
  waiting: 'info',
};

async function workflowPage(ctx: PageContext, id: string): Promise<void> {
  const status = h('div', { class: 'status-line', 'aria-live': 'polite' });
  const body = h('div');
  const nodeFilter = ctx.query.get('nstate') ?? '';
  const nodeAfter = ctx.query.get('nafter') ?? '';
  show(ctx.main, h('p', {}, h('a', { href: '#/workflows' }, '← Workflows')), status, body);
  const act = (action: 'cancel' | 'resume'): void => {
    post(`/v1/workflows/${encodeURIComponent(id)}/${action}`)
      .then(async () => {
        show(status, notice(action === 'cancel' ? 'Workflow cancelled.' : 'Workflow resumed.', 'ok'));
        await refresh();
        focusIfLost(status);
      })
      .catch((error: unknown) => show(status, notice(errorText(error), 'error')));
  };
  const nodeLink = (params: { nstate?: string; nafter?: string }): string =>
    `#/workflows/${encodeURIComponent(id)}${query(params)}`;
  const refresh = async (): Promise<void> => {
    let wf: WorkflowStatus;
    try {
      wf = await get<WorkflowStatus>(`/v1/workflows/${encodeURIComponent(id)}`, ctx.signal);
    } catch (error) {
      if (error instanceof ApiError && (error.status === 404 || error.status === 400)) {
        update(
          body,
          h('h1', {}, 'Workflow not found'),
          notice(`No workflow ${id} is visible to this token.`, 'error'),
        );
        return;
      }
      throw error;
    }
    const now = Date.now();
    const failedCount = wf.nodes.failed ?? 0;
    const failed = failedCount > 0 ? await nodesOf(ctx, id, 'failed', 200) : [];
    const drawable = wf.nodeCount <= GRAPH_MAX;
    const all = drawable ? await nodesOf(ctx, id, undefined, GRAPH_MAX) : [];
    const listed = await get<NodePage>(
      `/v1/workflows/${encodeURIComponent(id)}/nodes${query({ state: nodeFilter, after: nodeAfter, limit: NODE_LIST })}`,
      ctx.signal,
    );
    const timeline = ctx.session.routes.has('GET /v1/workflows/{id}/timeline')
      ? await timelineOf(ctx, id, drawable, nodeFilter, nodeAfter, listed.items)
      : null;
    const unfinished =
      wf.nodeCount -
      (wf.nodes.succeeded ?? 0) -
      failedCount -
      (wf.nodes.skipped ?? 0) -
      (wf.nodes.cancelled ?? 0);
    // Applied with a button: a select that navigated on change took keyboard users away at the first arrow key.
    const stateFilter = h(
      'select',
      { id: 'node-state', name: 'nstate' },
      h('option', { value: '' }, 'any'),
      NODE_STATES.map((st) => h('option', { value: st, selected: st === nodeFilter }, st)),
    );
    update(
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
          [
            'Took',
            wf.finishedAt === null
              ? `${duration(now - Date.parse(wf.startedAt))} so far`
              : duration(Date.parse(wf.finishedAt) - Date.parse(wf.startedAt)),
          ],
        ].flatMap(([k, v]) => [h('dt', {}, k ?? ''), h('dd', {}, v ?? '')]),
      ),
      wf.error === null ? null : [h('h2', {}, 'Error'), h('pre', { class: 'error-text' }, wf.error)],
      h(
        'div',
        { class: 'actions' },
        wf.state === 'running'
          ? h(
              'button',
              {
                type: 'button',
                onclick: () => {
                  void confirmAction(
                    `Cancel workflow ${wf.name === '' ? wf.id : wf.name}?`,
                    `Its ${unfinished} unfinished node${unfinished === 1 ? '' : 's'} will not run; running jobs are told to stop.`,
                    'Cancel workflow',
                  ).then((yes) => {
                    if (yes) act('cancel');
                  });
                },
              },
              'Cancel workflow',
            )
          : null,
        wf.state === 'failed' || wf.state === 'cancelled'
          ? h('button', { type: 'button', onclick: () => act('resume') }, 'Resume workflow')
          : null,
      ),
      h('h2', {}, 'Nodes by state'),
      table(
        'Nodes per state',
        ['State', 'Nodes'],
        Object.entries(wf.nodes).map(([state, n]) => [
          h('a', { href: nodeLink({ nstate: state }) }, state),
          String(n),
        ]),
        { class: 'counts' },
        Object.keys(wf.nodes),
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
              failed.map((n) => n.key),
            ),
          ],
      h('h2', {}, 'Graph'),
      nodeLegend(),
      drawable
        ? workflowGraph(all)
        : [
            notice(
              `${wf.nodeCount} nodes: too many to draw whole (up to ${GRAPH_MAX}). Drawn below: the ${listed.items.length} nodes listed on this page, with the dependencies among them.`,
            ),
            listed.items.length === 0 ? null : workflowGraph(listed.items),
          ],
      timeline === null ? null : timelineSection(timeline, drawable, now),
      h('h2', { id: 'node-list-h' }, 'Nodes'),
      h(
        'form',
        {
          class: 'filters',
          'aria-label': 'Nodes by state',
          onsubmit: (event: Event) => {
            event.preventDefault();
            const data = new FormData(event.target as HTMLFormElement);
            const chosen = data.get('nstate');
            location.hash = nodeLink({ nstate: typeof chosen === 'string' ? chosen : '' });
          },
        },
        h('label', { for: 'node-state' }, 'Node state'),
        stateFilter,
        h('button', { type: 'submit' }, 'Show'),
      ),
      listed.items.length === 0 ? notice('No nodes match.') : nodeTable(listed.items, now),
      h(
        'p',
        { class: 'pager' },
        nodeAfter === '' ? null : h('a', { href: nodeLink({ nstate: nodeFilter }) }, '← First nodes'),
        listed.next === null
          ? null
          : h(
              'a',
              { href: nodeLink({ nstate: nodeFilter, nafter: listed.next }) },
              `Next ${NODE_LIST} nodes →`,
            ),
      ),
    );
  };
  poll(ctx, POLL_MS, status, refresh);
  await Promise.resolve();
}

/**
 * The timeline's nodes: the whole workflow when it is drawable, else the critical path's last
 * PATH_DRAWN nodes and the page the node list shows (the same page by key, or its nodes by key
 * when the list is filtered by state).
 */
async function timelineOf(
  ctx: PageContext,
  id: string,
  drawable: boolean,
  nodeFilter: string,
  nodeAfter: string,
  listed: WorkflowNode[],
): Promise<{ timeline: WorkflowTimeline; nodes: TimelineNode[] }> {
  const base = `/v1/workflows/${encodeURIComponent(id)}/timeline`;
  let q: string;
  if (drawable) q = query({ limit: GRAPH_MAX, pathLimit: PATH_DRAWN });
  else if (nodeFilter === '') q = query({ after: nodeAfter, limit: NODE_LIST, pathLimit: PATH_DRAWN });
  else {
    const params = new URLSearchParams({ pathLimit: String(PATH_DRAWN), limit: '0' });
    for (const n of listed) {
      params.append('key', n.key);
      if (params.toString().length > KEYS_URL_MAX) {
        params.delete('key', n.key);
        break;
      }
    }
    q = `?${params.toString()}`;
  }
  const timeline = await get<WorkflowTimeline>(`${base}${q}`, ctx.signal);
  const byKey = new Map<string, TimelineNode>();
  for (const n of [...timeline.criticalPath, ...timeline.items]) byKey.set(n.key, n);
  return { timeline, nodes: [...byKey.values()] };
}

function timelineSection(
  t: { timeline: WorkflowTimeline; nodes: TimelineNode[] },
  drawable: boolean,
  now: number,
): (HTMLElement | null)[] {
  const path = t.timeline.criticalPath;
  const first = path[0];
  const last = path.at(-1);
  const took =
    first === undefined || last === undefined
      ? null
      : Date.parse(last.finishedAt ?? new Date(now).toISOString()) -
        Date.parse(first.releasedAt ?? first.startedAt ?? t.timeline.startedAt);
  return [
    h('h2', { id: 'timeline-h' }, 'Timeline'),
    timelineLegend(),
    path.length === 0
      ? notice('No node has finished yet: the critical path starts with the first one.')
      : h(
          'p',
          { class: 'critical-path' },
          h('strong', {}, 'Critical path: '),
          `${t.timeline.criticalPathComplete ? '' : '… → '}${path.map((n) => n.key).join(' → ')}`,
          ` (${path.length} node${path.length === 1 ? '' : 's'}${took === null ? '' : `, ${duration(took)}`}${t.timeline.state === 'running' ? ', so far' : ''})`,
        ),
    drawable
      ? null
      : notice(
          `Drawn: the critical path's last ${Math.min(PATH_DRAWN, path.length)} nodes and the nodes listed below.`,
        ),
    t.nodes.some((n) => n.startedAt !== null || n.releasedAt !== null)
      ? gantt(t.nodes, now)
      : notice('None of these nodes has been released yet: their dependencies have not finished.'),
  ];
}
