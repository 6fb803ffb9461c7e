/// <reference lib="dom" />
/**
 * The jobs list: state tabs with counts, a queue picker (for an admin: the configured queues and those
 * holding open or dead jobs),
 * kind and tenant filters, pages of 100 newest first with a cursor to older ones, and bulk cancel,
 * retry or discard of the rows ticked or of everything matching the filter, each confirmed with the
 * number of jobs it touches. The filter lives in the hash route, so a view can be shared.
 */
import { get, metricsText, post, query } from '../api.ts';
import { confirmAction } from '../confirm.ts';
import { h, notice, show, table, update } from '../dom.ts';
import { ago, local } from '../format.ts';
import { tenantChoice } from '../filters.ts';
import { errorText, poll, type PageContext } from '../page.ts';
import { parseMetrics, samplesNamed } from '../prom.ts';
import { JOB_STATES, type Job, type Page } from '../types.ts';
import { cancelButton, jobPage, progressCell, runTime, stateBadge } from './jobs.ts';

const POLL_MS = 2000;
const PAGE = 100;
/** Requests of this many jobs each work through a filter (the route's maximum). */
const BULK_PAGE = 1000;

type Action = 'cancel' | 'retry' | 'discard';
const APPLIES: Record<Action, readonly string[]> = {
  cancel: ['scheduled', 'available', 'running', 'failed'],
  retry: ['dead', 'cancelled', 'failed'],
  discard: ['dead'],
};
const WHAT: Record<Action, (n: string) => string> = {
  cancel: (n) => `${n} will not run; running ones are told to stop.`,
  retry: (n) => `${n} run again now, with one more attempt.`,
  discard: (n) => `${n} and their attempts are deleted for good.`,
};
const VERB: Record<Action, string> = { cancel: 'Cancel', retry: 'Retry', discard: 'Discard' };

interface Filters {
  queue: string;
  state: string;
  kind: string;
  tenantId: string;
  before: string;
}

const jobsWord = (n: number | string): string => `${n} job${n === 1 || n === '1' ? '' : 's'}`;

/** `#/jobs` is the list, `#/jobs/42` one job. */
export async function jobsPage(ctx: PageContext): Promise<void> {
  if (ctx.params[0] !== undefined) return jobPage(ctx, ctx.params[0]);
  return jobListPage(ctx);
}

async function jobListPage(ctx: PageContext): Promise<void> {
  const f: Filters = {
    queue: ctx.query.get('queue') ?? '',
    state: ctx.query.get('state') ?? '',
    kind: ctx.query.get('kind') ?? '',
    tenantId: ctx.query.get('tenantId') ?? '',
    before: ctx.query.get('before') ?? '',
  };
  const tenantId = ctx.session.admin && f.tenantId !== '' ? f.tenantId : undefined;
  const link = (change: Partial<Filters>): string =>
    `#/jobs${query({ queue: f.queue, state: f.state, kind: f.kind, tenantId, ...change })}`;
  const status = h('div', { class: 'status-line', 'aria-live': 'polite' });
  const tabs = h('nav', { class: 'tabs', 'aria-label': 'Job states' });
  const bulk = h('div', { class: 'toolbar' });
  const list = h('div');
  const selected = new Set<number>();
  let counts: Record<string, number> = {};
  let cap = Infinity;
  let items: Job[] = [];
  show(ctx.main, h('h1', {}, 'Jobs'), await filterForm(ctx, f), tabs, bulk, status, list);

  const countText = (state: string): string => {
    const n = counts[state];
    return n === undefined ? '…' : n >= cap ? `${n.toLocaleString()}+` : n.toLocaleString();
  };

  const runBulk = (action: Action, ids: number[] | null): void => {
    const n = ids === null ? countText(f.state) : String(ids.length);
    const scope = ids === null ? `all ${jobsWord(n)} in state ${f.state} matching this filter` : jobsWord(n);
    void confirmAction(`${VERB[action]} ${scope}?`, WHAT[action](jobsWord(n)), `${VERB[action]} ${n}`).then(
      async (yes) => {
        if (!yes) return;
        try {
          let done = 0;
          let left = 0;
          if (ids !== null) {
            const r = await post<{ done: number[]; notDone: number[] }>('/v1/jobs/bulk', { action, ids });
            done = r.done.length;
            left = r.notDone.length;
          } else {
            let before: number | null | undefined;
            do {
              const r: { done: number[]; notDone: number[]; next: number | null } = await post(
                '/v1/jobs/bulk',
                {
                  action,
                  filter: {
                    queue: f.queue || undefined,
                    state: f.state,
                    kind: f.kind || undefined,
                    tenantId,
                  },
                  limit: BULK_PAGE,
                  ...(before == null ? {} : { before }),
                },
              );
              done += r.done.length;
              left += r.notDone.length;
              before = r.next;
              show(status, notice(`${VERB[action]}: ${jobsWord(done)} so far…`));
            } while (before !== null);
          }
          selected.clear();
          show(
            status,
            notice(
              `${VERB[action]}: ${jobsWord(done)} done${left === 0 ? '' : `; ${left} left alone (no longer in a state it applies to)`}.`,
              'ok',
            ),
          );
          await refresh();
        } catch (error) {
          show(status, notice(errorText(error), 'error'));
        }
      },
    );
  };

  const drawBulk = (): void => {
    const ticked = items.filter((j) => selected.has(j.id));
    const actions = (['cancel', 'retry', 'discard'] as const).flatMap((action) => {
      const ids = ticked.filter((j) => APPLIES[action].includes(j.state)).map((j) => j.id);
      const buttons = [
        h(
          'button',
          {
            type: 'button',
            class: 'secondary',
            disabled: ids.length === 0,
            onclick: () => runBulk(action, ids),
          },
          `${VERB[action]} selected (${ids.length})`,
        ),
      ];
      if (f.state !== '' && APPLIES[action].includes(f.state) && (counts[f.state] ?? 0) > 0) {
        buttons.push(
          h(
            'button',
            { type: 'button', class: 'secondary', onclick: () => runBulk(action, null) },
            `${VERB[action]} all ${countText(f.state)} matching`,
          ),
        );
      }
      return buttons;
    });
    update(bulk, h('span', { class: 'muted' }, `${ticked.length} selected`), actions);
  };

  const refresh = async (): Promise<void> => {
    const [page, c] = await Promise.all([
      get<Page<Job>>(
        `/v1/jobs${query({ queue: f.queue, state: f.state, kind: f.kind, tenantId, before: f.before, limit: PAGE })}`,
        ctx.signal,
      ),
      get<{ counts: Record<string, number>; cap: number }>(
        `/v1/job-counts${query({ queue: f.queue, kind: f.kind, tenantId })}`,
        ctx.signal,
      ),
    ]);
    counts = c.counts;
    cap = c.cap;
    items = page.items;
    const now = Date.now();
    update(
      tabs,
      h('a', { href: link({ state: '' }), 'aria-current': f.state === '' ? 'page' : null }, 'All'),
      JOB_STATES.map((state) =>
        h(
          'a',
          { href: link({ state }), 'aria-current': f.state === state ? 'page' : null },
          state,
          ' ',
          h('span', { class: 'count' }, countText(state)),
        ),
      ),
    );
    const all = h('input', {
      type: 'checkbox',
      'aria-label': 'Select every job shown',
      checked: items.length > 0 && items.every((j) => selected.has(j.id)),
      onchange: (e: Event) => {
        const on = (e.target as HTMLInputElement).checked;
        for (const j of items)
          if (on) selected.add(j.id);
          else selected.delete(j.id);
        list.querySelectorAll<HTMLInputElement>('input.pick').forEach((box) => {
          box.checked = on;
        });
        drawBulk();
      },
    });
    update(
      list,
      items.length === 0
        ? notice(f.before === '' ? 'No jobs match.' : 'No older jobs match.')
        : table(
            'Jobs, newest first',
            ['', 'Job', 'Queue', 'Kind', 'Tenant', 'State', 'Attempt', 'Progress', 'Run time', 'Created', ''],
            items.map((j) => [
              h('input', {
                type: 'checkbox',
                class: 'pick',
                'aria-label': `Select job ${j.id}`,
                checked: selected.has(j.id),
                onchange: (e: Event) => {
                  if ((e.target as HTMLInputElement).checked) selected.add(j.id);
                  else selected.delete(j.id);
                  drawBulk();
                },
              }),
              h('a', { href: `#/jobs/${j.id}` }, `#${j.id}`),
              j.queue,
              j.kind,
              j.tenantId,
              stateBadge(j.state),
              `${j.attempt} / ${j.maxAttempts}`,
              progressCell(j, now),
              runTime(j, now),
              h('time', { datetime: j.createdAt, title: local(j.createdAt) }, ago(j.createdAt, now)),
              cancelButton(j, status, refresh),
            ]),
            { class: 'jobs' },
            items.map((j) => String(j.id)),
          ),
      h(
        'p',
        { class: 'pager' },
        f.before === '' ? null : h('a', { href: link({ before: '' }) }, '← Newest jobs'),
        page.next === null
          ? null
          : h('a', { href: link({ before: String(page.next) }) }, `Older ${PAGE} jobs →`),
      ),
    );
    const head = list.querySelector('thead th');
    if (head !== null) update(head, all);
    drawBulk();
  };
  poll(ctx, POLL_MS, status, refresh);
}

/** Queue (with the server's queues to pick from, for an admin), kind and tenant; state is the tabs. */
async function filterForm(ctx: PageContext, f: Filters): Promise<HTMLElement> {
  const queues = new Set<string>();
  if (ctx.session.admin) {
    // The queues with settings, and those holding open or dead jobs (/metrics, cluster-wide).
    const [configured, metrics] = await Promise.allSettled([
      get<{ items: { name: string }[] }>('/v1/queues', ctx.signal),
      metricsText(ctx.signal),
    ]);
    if (configured.status === 'fulfilled') for (const q of configured.value.items) queues.add(q.name);
    if (metrics.status === 'fulfilled') {
      for (const s of samplesNamed(parseMetrics(metrics.value), 'tidemark_jobs'))
        queues.add(s.labels.queue ?? '');
    }
    queues.delete('');
  }
  const queue = h('input', {
    id: 'f-queue',
    name: 'queue',
    value: f.queue,
    autocomplete: 'off',
    list: 'queue-names',
  });
  const kind = h('input', { id: 'f-kind', name: 'kind', value: f.kind, autocomplete: 'off' });
  const tenant = tenantChoice(ctx, 'f-tenant', f.tenantId);
  return h(
    'form',
    {
      class: 'filters',
      role: 'search',
      'aria-label': 'Filter jobs',
      onsubmit: (event: Event) => {
        event.preventDefault();
        location.hash = `#/jobs${query({ queue: queue.value.trim(), state: f.state, kind: kind.value.trim(), tenantId: tenant?.value })}`;
      },
    },
    h('label', { for: 'f-queue' }, 'Queue'),
    queue,
    h(
      'datalist',
      { id: 'queue-names' },
      [...queues].sort().map((q) => h('option', { value: q })),
    ),
    h('label', { for: 'f-kind' }, 'Kind'),
    kind,
    tenant === null ? null : [h('label', { for: 'f-tenant' }, 'Tenant'), tenant],
    h('button', { type: 'submit' }, 'Filter'),
  );
}
