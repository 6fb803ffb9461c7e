/// <reference lib="dom" />
/**
 * The jobs list: state tabs with counts, a queue picker (for an admin: the configured queues and those
 * holding open or dead jobs), kind, payload and tenant filters, pages of 100 newest first with a
 * cursor to older ones, and bulk cancel, retry or discard of the rows ticked or of everything
 * matching the filter, each confirmed with the number of jobs it touches. The filter lives in the
 * hash route, so a view can be shared.
 *
 * A kind or payload search reads at most 10,000 jobs a page (GET /v1/jobs, docs/api.md): a page it
 * cut short says so and links on to the older jobs it has not read yet.
 */
import { ApiError, get, metricsText, post, query } from '../api.ts';
import { confirmAction } from '../confirm.ts';
import { h, notice, show, table, update } from '../dom.ts';
import { fieldErrorsClear, fieldErrorsShow, type FieldProblem } from '../fields.ts';
import { ago, local } from '../format.ts';
import { tenantChoice } from '../filters.ts';
import { errorText, focusIfLost, poll, type PageContext } from '../page.ts';
import { parseMetrics, samplesNamed } from '../prom.ts';
import { JOB_STATES, type Job } from '../types.ts';
import { cancelButton, jobPage, progressCell, runTime, stateBadge } from './jobs.ts';

const POLL_MS = 2000;
const PAGE = 100;
/** Jobs a kind or payload search reads per page, and each state's count at most (the API's bound). */
const SCAN = 10_000;
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
  payload: string;
  tenantId: string;
  before: string;
}

interface JobPage {
  items: Job[];
  next: number | null;
  cutShort: boolean;
}

/** The filter fields the API may refuse, by query parameter. */
type FilterInputs = Record<'queue' | 'kind' | 'payload', HTMLInputElement>;

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
    payload: ctx.query.get('payload') ?? '',
    tenantId: ctx.query.get('tenantId') ?? '',
    before: ctx.query.get('before') ?? '',
  };
  const tenantId = ctx.session.admin && f.tenantId !== '' ? f.tenantId : undefined;
  const link = (change: Partial<Filters>): string =>
    `#/jobs${query({ queue: f.queue, state: f.state, kind: f.kind, payload: f.payload, tenantId, ...change })}`;
  const status = h('div', { class: 'status-line', 'aria-live': 'polite' });
  const tabs = h('nav', { class: 'tabs', 'aria-label': 'Job states' });
  const bulk = h('div', { class: 'toolbar' });
  const list = h('div');
  const selected = new Set<number>();
  let counts: Record<string, number> = {};
  let exact: Record<string, boolean> = {};
  let items: Job[] = [];
  const { form, inputs } = await filterForm(ctx, f);
  show(ctx.main, h('h1', {}, 'Jobs'), form, tabs, bulk, status, list);

  const countText = (state: string): string => {
    const n = counts[state];
    return n === undefined ? '…' : exact[state] === false ? `${n.toLocaleString()}+` : n.toLocaleString();
  };
  const filterText = [
    f.queue === '' ? null : `queue ${f.queue}`,
    f.kind === '' ? null : `kind ${f.kind}`,
    f.payload === '' ? null : `payload contains ${f.payload}`,
    tenantId === undefined ? null : `tenant ${tenantId}`,
  ]
    .filter((x) => x !== null)
    .join(' · ');

  const runBulk = (action: Action, ids: number[] | null): void => {
    const n = ids === null ? countText(f.state) : String(ids.length);
    const scope = ids === null ? `all ${jobsWord(n)} in state ${f.state} matching this filter` : jobsWord(n);
    const detail =
      ids === null
        ? h(
            'div',
            {},
            h('p', {}, WHAT[action](jobsWord(n))),
            h('p', {}, `Filter: state ${f.state}${filterText === '' ? '' : ` · ${filterText}`}.`),
            exact[f.state] === false
              ? h(
                  'p',
                  {},
                  `The count read the newest ${SCAN.toLocaleString()} ${f.state} jobs only; the action goes through all of them, so it may touch more.`,
                )
              : null,
          )
        : WHAT[action](jobsWord(n));
    void confirmAction(`${VERB[action]} ${scope}?`, detail, `${VERB[action]} ${n}`).then(async (yes) => {
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
                  payload: f.payload || undefined,
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
      focusIfLost(status);
    });
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
    const filter = { queue: f.queue, kind: f.kind, payload: f.payload, tenantId };
    let page: JobPage;
    let c: { counts: Record<string, number>; exact: Record<string, boolean> };
    try {
      [page, c] = await Promise.all([
        get<JobPage>(
          `/v1/jobs${query({ ...filter, state: f.state, before: f.before, limit: PAGE })}`,
          ctx.signal,
        ),
        get<{ counts: Record<string, number>; exact: Record<string, boolean> }>(
          `/v1/job-counts${query(filter)}`,
          ctx.signal,
        ),
      ]);
    } catch (error) {
      // A shared link with a filter the API refuses: say which field, under it, and stop there.
      if (!(error instanceof ApiError) || error.status !== 400 || error.fields.length === 0) throw error;
      if (list.dataset.refused !== 'true') {
        list.dataset.refused = 'true';
        const rest = showFilterErrors(inputs, error.fields, false);
        update(
          list,
          notice(`No jobs shown: the filter is refused${rest === '' ? '' : ` (${rest})`}.`, 'error'),
        );
        update(tabs);
        update(bulk);
      }
      return;
    }
    counts = c.counts;
    exact = c.exact;
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
    // Above the table too: from the filter, the older page is a few Tabs away, not 300.
    const pager = (where: string): HTMLElement | null =>
      f.before === '' && page.next === null
        ? null
        : h(
            'p',
            { class: 'pager', 'data-key': `pager-${where}` },
            f.before === '' ? null : h('a', { href: link({ before: '' }) }, '← Newest jobs'),
            page.next === null
              ? null
              : h(
                  'a',
                  { href: link({ before: String(page.next) }) },
                  page.cutShort ? 'Search older jobs →' : `Older ${PAGE} jobs →`,
                ),
          );
    update(
      list,
      items.length === 0 ? null : pager('top'),
      items.length === 0
        ? notice(f.before === '' ? 'No jobs match.' : 'No older jobs match.')
        : table(
            'Jobs, newest first',
            // The checkbox is part of the table, so `update` keeps the focused one in place.
            [
              all,
              'Job',
              'Queue',
              'Kind',
              'Tenant',
              'State',
              'Attempt',
              'Progress',
              'Run time',
              'Created',
              '',
            ],
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
      page.cutShort
        ? h(
            'p',
            { class: 'notice cut-short', role: 'status' },
            `This page stopped after reading ${SCAN.toLocaleString()} jobs${page.next === null ? '' : ` (down to #${page.next})`}, with ${jobsWord(items.length)} matching: kind and payload are searched ${SCAN.toLocaleString()} jobs at a time. Older jobs are not searched yet.`,
          )
        : null,
      pager('bottom'),
    );
    drawBulk();
  };
  poll(ctx, POLL_MS, status, refresh);
}

/** Field errors under the filter inputs; returns the problems none of them shows, as text. */
function showFilterErrors(inputs: FilterInputs, problems: readonly FieldProblem[], focus: boolean): string {
  fieldErrorsClear(Object.values(inputs));
  const active = document.activeElement;
  const rest = fieldErrorsShow(inputs, problems, 'query.');
  // Shown on load, the errors must not pull the focus from the page's heading.
  if (!focus && active instanceof HTMLElement) active.focus();
  return rest.map((p) => `${p.field}: ${p.reason}`).join('; ');
}

/**
 * Queue (with the server's queues to pick from, for an admin), kind, payload and tenant; state is
 * the tabs. Filter asks the API first (one job): a filter it refuses shows the reason under its
 * field and stays in the form to be fixed, instead of a page of errors.
 */
async function filterForm(
  ctx: PageContext,
  f: Filters,
): Promise<{ form: HTMLElement; inputs: FilterInputs }> {
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
  const input = (name: string, value: string, extra: Record<string, string> = {}): HTMLInputElement =>
    h('input', {
      id: `f-${name}`,
      name,
      value,
      autocomplete: 'off',
      'aria-describedby': `f-${name}-error${name === 'payload' ? ' f-payload-hint' : ''}`,
      ...extra,
    });
  const inputs: FilterInputs = {
    queue: input('queue', f.queue, { list: 'queue-names' }),
    kind: input('kind', f.kind),
    payload: input('payload', f.payload, {
      placeholder: 'customer=42 or {"customer": 42}',
      spellcheck: 'false',
    }),
  };
  const tenant = tenantChoice(ctx, 'f-tenant', f.tenantId);
  const formStatus = h('div', { 'aria-live': 'polite' });
  const field = (label: string, el: HTMLInputElement | HTMLSelectElement, hint?: string): HTMLElement =>
    h(
      'div',
      { class: `field filter-${el.name}` },
      h('label', { for: el.id }, label),
      el,
      hint === undefined ? null : h('small', { id: `${el.id}-hint` }, hint),
      h('p', { id: `${el.id}-error`, class: 'field-error', hidden: true }),
    );
  const form = h(
    'form',
    {
      class: 'filters stacked',
      role: 'search',
      'aria-label': 'Filter jobs',
      onsubmit: (event: Event) => {
        event.preventDefault();
        const wanted = {
          queue: inputs.queue.value.trim(),
          state: f.state,
          kind: inputs.kind.value.trim(),
          payload: inputs.payload.value.trim(),
          tenantId: tenant?.value,
        };
        fieldErrorsClear(Object.values(inputs));
        formStatus.replaceChildren();
        get(`/v1/jobs${query({ ...wanted, limit: 1 })}`, ctx.signal)
          .then(() => {
            location.hash = `#/jobs${query(wanted)}`;
          })
          .catch((error: unknown) => {
            if (ctx.signal.aborted) return;
            const rest =
              error instanceof ApiError ? showFilterErrors(inputs, error.fields, true) : errorText(error);
            if (rest !== '') formStatus.replaceChildren(notice(`Not filtered: ${rest}`, 'error'));
          });
      },
    },
    field('Queue', inputs.queue),
    h(
      'datalist',
      { id: 'queue-names' },
      [...queues].sort().map((q) => h('option', { value: q })),
    ),
    field('Kind', inputs.kind),
    field('Payload contains', inputs.payload, 'key=value pairs (customer=42 region=eu) or a JSON object'),
    tenant === null ? null : field('Tenant', tenant),
    h('button', { type: 'submit' }, 'Filter'),
    formStatus,
  );
  return { form, inputs };
}
