/// <reference lib="dom" />
/**
 * Overview: schedule lag p50/p99, throughput (jobs succeeded, attempts failed) and backlog over the
 * last hours, read from the database (GET /v1/history) so a reload draws the same charts at once;
 * backlog per queue, running and dead counts, the leader and its epoch; and an alert when lag passes
 * a threshold the operator sets (kept in localStorage).
 *
 * With an admin token the live figures come from /metrics, which is cluster-wide. With a tenant
 * token they come from that tenant's own jobs through /v1/jobs, the history is the tenant's own, and
 * no cluster figure is shown (leadership is shared by every tenant, and the per-queue depths would
 * tell one tenant about the others).
 */
import { get, metricsText, query } from '../api.ts';
import { lineChart } from '../chart.ts';
import { bar, h, notice, update, table } from '../dom.ts';
import { poll, type PageContext } from '../page.ts';
import { parseMetrics, sumBy, samplesNamed } from '../prom.ts';
import type { History, Job, Page } from '../types.ts';

const POLL_MS = 5000;
/** The charts' window, and how often it is read again (a minute is its grain). */
const HISTORY_HOURS = 3;
const HISTORY_EVERY_MS = 30_000;
const THRESHOLD_KEY = 'tidemark.lagAlertSeconds';
/**
 * Default alert: the worst lateness the design allows is the lease TTL plus one tick (10 s + 1 s,
 * DESIGN.md decision 2), so a lag past 15 s is something the failover does not explain.
 */
const DEFAULT_THRESHOLD_S = 15;
const MINUTE = 60_000;

export function thresholdGet(): number {
  const saved = Number(localStorage.getItem(THRESHOLD_KEY));
  return Number.isFinite(saved) && saved > 0 ? saved : DEFAULT_THRESHOLD_S;
}

export async function overviewPage(ctx: PageContext): Promise<void> {
  const status = h('div', { class: 'status-line' });
  const alert = h('div');
  const live = h('div');
  const charts = h('div');
  const form = thresholdForm(thresholdGet(), () => void drawHistory().catch(() => undefined));
  update(ctx.main, h('h1', {}, 'Overview'), status, alert, live, charts, form);
  let history: History | null = null;
  let historyAt = 0;
  let lagNow = 0;
  const drawHistory = async (): Promise<void> => {
    if (history === null || Date.now() - historyAt >= HISTORY_EVERY_MS) {
      history = await get<History>(`/v1/history${query({})}`, ctx.signal);
      historyAt = Date.now();
    }
    const threshold = thresholdGet();
    const recentP99 = (history.lag.at(-1)?.p99Ms ?? 0) / 1000;
    const alerting = ctx.session.admin && (lagNow > threshold || recentP99 > threshold);
    update(
      alert,
      alerting
        ? h(
            'div',
            { class: 'alert', role: 'alert' },
            h('strong', {}, 'Schedule lag alert: '),
            `lag is ${lagNow.toFixed(1)} s now, p99 of the last minute ${recentP99.toFixed(1)} s, over the ${threshold} s threshold. The scheduler is falling behind or has no leader.`,
          )
        : null,
    );
    update(charts, historyCharts(history, threshold));
  };
  const tick = async (): Promise<void> => {
    if (ctx.session.admin) lagNow = await clusterTick(ctx, live);
    else await tenantTick(ctx, live);
    await drawHistory();
  };
  poll(ctx, POLL_MS, status, tick);
  await Promise.resolve();
}

/** Every minute of the window, with null where the series has no row for it. */
function perMinute<T extends { at: string }>(
  window: History,
  rows: T[],
  value: (row: T) => number,
  missing: number | null,
): { t: number; v: number | null }[] {
  const byMinute = new Map(rows.map((r) => [Math.floor(Date.parse(r.at) / MINUTE), value(r)]));
  const out: { t: number; v: number | null }[] = [];
  const last = Math.ceil(Date.parse(window.to) / MINUTE);
  for (let m = Math.floor(Date.parse(window.from) / MINUTE); m < last; m++) {
    out.push({ t: m * MINUTE, v: byMinute.get(m) ?? missing });
  }
  return out;
}

function historyCharts(history: History, threshold: number): HTMLElement[] {
  const lagRows = history.lag;
  const approximate = lagRows.some((m) => !m.exact);
  const succeeded = history.throughput.reduce((n, m) => n + m.succeeded, 0);
  const failed = history.throughput.reduce((n, m) => n + m.failed, 0);
  const waiting = history.backlog.at(-1)?.waiting ?? 0;
  return [
    h(
      'section',
      { 'aria-labelledby': 'lag-h' },
      h('h2', { id: 'lag-h' }, `Schedule lag, last ${HISTORY_HOURS} hours`),
      lagRows.length === 0
        ? notice(`No schedule fired in the last ${HISTORY_HOURS} hours.`)
        : lineChart(
            `Schedule lag p50 and p99 per minute over the last ${HISTORY_HOURS} hours; worst p99 ${(Math.max(...lagRows.map((m) => m.p99Ms)) / 1000).toFixed(2)} s`,
            [
              // p99 first, so p50 is drawn on top where they meet.
              {
                label: 'p99',
                className: 's-p99',
                points: perMinute(history, lagRows, (m) => m.p99Ms / 1000, null),
              },
              {
                label: 'p50',
                className: 's-p50',
                points: perMinute(history, lagRows, (m) => m.p50Ms / 1000, null),
              },
            ],
            { unit: 's', threshold, minTop: 0.1 },
          ),
      h(
        'p',
        { class: 'hint' },
        'How late each scheduled occurrence was decided (materialised minus fire time), from the occurrence ledger.',
        approximate
          ? ' Minutes retention has rolled up show their mean and worst instead of p50 and p99.'
          : '',
      ),
    ),
    h(
      'section',
      { 'aria-labelledby': 'throughput-h' },
      h('h2', { id: 'throughput-h' }, `Throughput: ${succeeded} succeeded, ${failed} failed attempts`),
      lineChart(
        `Jobs succeeded and attempts failed per minute over the last ${HISTORY_HOURS} hours`,
        [
          {
            label: 'succeeded / min',
            className: 's-ok',
            points: perMinute(history, history.throughput, (m) => m.succeeded, 0),
          },
          {
            label: 'failed / min',
            className: 's-bad',
            points: perMinute(history, history.throughput, (m) => m.failed, 0),
          },
        ],
        { unit: '' },
      ),
    ),
    h(
      'section',
      { 'aria-labelledby': 'backlog-h' },
      h('h2', { id: 'backlog-h' }, `Backlog: ${waiting} due and waiting`),
      lineChart(
        `Jobs due and not started, at the end of each minute over the last ${HISTORY_HOURS} hours`,
        [
          {
            label: 'waiting',
            className: 's-p50',
            points: history.backlog.map((m) => ({ t: Date.parse(m.at), v: m.waiting })),
          },
        ],
        { unit: '' },
      ),
    ),
  ];
}

/** The live figures from /metrics; returns the lag gauge for the alert. */
async function clusterTick(ctx: PageContext, body: HTMLElement): Promise<number> {
  const samples = parseMetrics(await metricsText(ctx.signal));
  const lag = samplesNamed(samples, 'tidemark_schedule_lag_seconds')[0]?.value ?? 0;

  const queues = new Set<string>();
  const byState = new Map<string, Map<string, number>>();
  for (const s of samplesNamed(samples, 'tidemark_jobs')) {
    const q = s.labels.queue ?? '';
    queues.add(q);
    const m = byState.get(s.labels.state ?? '') ?? new Map<string, number>();
    m.set(q, s.value);
    byState.set(s.labels.state ?? '', m);
  }
  const count = (state: string, q: string) => byState.get(state)?.get(q) ?? 0;
  const total = (state: string) => [...(byState.get(state)?.values() ?? [])].reduce((a, b) => a + b, 0);
  const epochs = sumBy(samples, 'tidemark_leader_epoch', 'lease');
  const leaders = samplesNamed(samples, 'tidemark_leader_held');
  const threshold = thresholdGet();
  update(
    body,
    h(
      'section',
      { class: 'cards', 'aria-label': 'Totals' },
      card('Schedule lag now', `${lag.toFixed(1)} s`, lag > threshold ? 'bad' : 'ok'),
      card('Backlog (due, waiting)', String(total('available')), total('available') > 0 ? 'warn' : 'ok'),
      card('Running', String(total('running')), 'ok'),
      card('Dead', String(total('dead')), total('dead') > 0 ? 'bad' : 'ok'),
    ),
    h(
      'section',
      { 'aria-labelledby': 'leader-h' },
      h('h2', { id: 'leader-h' }, 'Leadership'),
      epochs.size === 0
        ? notice('No lease has been taken yet: no scheduler has started against this database.')
        : table(
            'Leases',
            ['Lease', 'Leader', 'Epoch'],
            [...epochs].map(([lease, epoch]) => {
              const held = leaders.find((l) => l.labels.lease === lease && l.value === 1);
              return [lease, held?.labels.holder ?? h('em', {}, 'none (lease expired)'), String(epoch)];
            }),
          ),
    ),
    h(
      'section',
      { 'aria-labelledby': 'queues-h' },
      h('h2', { id: 'queues-h' }, 'Queues'),
      queues.size === 0
        ? notice('No open or dead jobs in any queue.')
        : queueTable(
            [...queues].sort().map((q) => ({
              queue: q,
              available: count('available', q),
              scheduled: count('scheduled', q),
              running: count('running', q),
              dead: count('dead', q),
            })),
          ),
    ),
  );
  return lag;
}

interface QueueRow {
  queue: string;
  available: number | string;
  scheduled: number | string;
  running: number | string;
  dead: number | string;
}

function queueTable(rows: QueueRow[]): HTMLTableElement {
  const max = Math.max(1, ...rows.map((r) => (typeof r.available === 'number' ? r.available : 1000)));
  return table(
    'Jobs per queue',
    ['Queue', 'Backlog (due)', 'Scheduled later', 'Running', 'Dead'],
    rows.map((r) => [
      h('a', { href: `#/jobs?queue=${encodeURIComponent(r.queue)}` }, r.queue),
      h(
        'span',
        { class: 'bar-cell' },
        bar(barWidth(r.available, max), { 'aria-hidden': 'true' }),
        String(r.available),
      ),
      String(r.scheduled),
      String(r.running),
      r.dead === 0
        ? '0'
        : h('a', { href: `#/dead-letter?queue=${encodeURIComponent(r.queue)}` }, String(r.dead)),
    ]),
    { class: 'queues' },
    rows.map((r) => r.queue),
  );
}

function barWidth(n: number | string, max: number): number {
  return ((typeof n === 'number' ? n : max) / max) * 100;
}

function card(label: string, value: string, tone: string): HTMLElement {
  return h(
    'div',
    { class: `card card-${tone}` },
    h('div', { class: 'card-value' }, value),
    h('div', { class: 'card-label' }, label),
  );
}

function thresholdForm(current: number, saved: () => void): HTMLFormElement {
  const input = h('input', {
    id: 'lag-threshold',
    name: 'threshold',
    type: 'number',
    min: 0.1,
    step: 'any',
    value: current,
    required: true,
  });
  return h(
    'form',
    {
      class: 'inline-form',
      onsubmit: (event: Event) => {
        event.preventDefault();
        const v = Number(input.value);
        if (Number.isFinite(v) && v > 0) localStorage.setItem(THRESHOLD_KEY, String(v));
        saved();
      },
    },
    h('label', { for: 'lag-threshold' }, 'Alert when lag exceeds (seconds)'),
    input,
    h('button', { type: 'submit' }, 'Save'),
  );
}

/** A tenant's counts, from its own jobs: up to LIST_CAP per state, shown as "1000+" beyond. */
const LIST_CAP = 1000;

async function tenantTick(ctx: PageContext, body: HTMLElement): Promise<void> {
  const states = ['available', 'scheduled', 'running', 'dead'] as const;
  const lists = await Promise.all(
    states.map((state) => get<Page<Job>>(`/v1/jobs${query({ state, limit: LIST_CAP })}`, ctx.signal)),
  );
  const rows = new Map<string, QueueRow>();
  const totals: Record<string, string> = {};
  states.forEach((state, i) => {
    const list = lists[i];
    if (list === undefined) return;
    const capped = list.next !== null;
    totals[state] = `${list.items.length}${capped ? '+' : ''}`;
    for (const job of list.items) {
      const row = rows.get(job.queue) ?? {
        queue: job.queue,
        available: 0,
        scheduled: 0,
        running: 0,
        dead: 0,
      };
      row[state] = Number(row[state]) + 1;
      rows.set(job.queue, row);
    }
  });
  update(
    body,
    h(
      'section',
      { class: 'cards', 'aria-label': 'Totals' },
      card('Backlog (due, waiting)', totals.available ?? '0', 'ok'),
      card('Running', totals.running ?? '0', 'ok'),
      card('Dead', totals.dead ?? '0', totals.dead === '0' ? 'ok' : 'bad'),
    ),
    h(
      'p',
      { class: 'hint' },
      'Signed in with a tenant token: these are your tenant’s jobs and schedules only. Leadership is cluster-wide and needs an admin token.',
    ),
    h(
      'section',
      { 'aria-labelledby': 'queues-h' },
      h('h2', { id: 'queues-h' }, 'Queues'),
      rows.size === 0
        ? notice('No open or dead jobs.')
        : queueTable([...rows.values()].sort((a, b) => a.queue.localeCompare(b.queue))),
    ),
  );
}
