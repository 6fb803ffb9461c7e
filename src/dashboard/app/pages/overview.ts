/// <reference lib="dom" />
/**
 * Overview: schedule lag over time (p50/p99), backlog per queue, running and dead counts, the leader
 * and its epoch, and an alert when lag passes a threshold the operator sets (kept in localStorage).
 *
 * With an admin token it reads /metrics, which is cluster-wide. With a tenant token it counts that
 * tenant's own jobs through /v1/jobs instead and shows no cluster figures (lag and leadership are
 * shared by every tenant, and the per-queue depths would tell one tenant about the others).
 */
import { get, metricsText, query } from '../api.ts';
import { lineChart } from '../chart.ts';
import { bar, h, notice, show, table } from '../dom.ts';
import { duration } from '../format.ts';
import { poll, type PageContext } from '../page.ts';
import {
  bucketsDelta,
  histogramBuckets,
  parseMetrics,
  quantile,
  quantileOf,
  sumBy,
  samplesNamed,
  type Buckets,
} from '../prom.ts';
import type { Job, Page } from '../types.ts';

const POLL_MS = 5000;
/** Gauge samples per p50/p99 point when the server exports no lag histogram: one minute at POLL_MS. */
const WINDOW = 12;
/** Points kept for the chart: an hour at POLL_MS. */
const KEEP = 720;
const THRESHOLD_KEY = 'tidemark.lagAlertSeconds';
/**
 * Default alert: the worst lateness the design allows is the lease TTL plus one tick (10 s + 1 s,
 * DESIGN.md decision 2), so a lag past 15 s is something the failover does not explain.
 */
const DEFAULT_THRESHOLD_S = 15;
/** A histogram of occurrence lateness, if the scheduler exports one into the same scrape. */
const LAG_HISTOGRAM = 'tidemark_occurrence_lag_seconds';

interface Point {
  t: number;
  /** tidemark_schedule_lag_seconds at the scrape. */
  lag: number;
  p50: number | null;
  p99: number | null;
}

// Kept across visits to the page within the tab, so the chart does not restart at every click.
const history: Point[] = [];
let lastBuckets: Buckets | null = null;

export function thresholdGet(): number {
  const saved = Number(localStorage.getItem(THRESHOLD_KEY));
  return Number.isFinite(saved) && saved > 0 ? saved : DEFAULT_THRESHOLD_S;
}

export async function overviewPage(ctx: PageContext): Promise<void> {
  const status = h('div', { class: 'status-line' });
  const body = h('div');
  show(ctx.main, h('h1', {}, 'Overview'), status, body);
  if (ctx.session.admin) poll(ctx, POLL_MS, status, () => clusterTick(ctx, body));
  else poll(ctx, POLL_MS, status, () => tenantTick(ctx, body));
  await Promise.resolve();
}

async function clusterTick(ctx: PageContext, body: HTMLElement): Promise<void> {
  const samples = parseMetrics(await metricsText(ctx.signal));
  const lag = samplesNamed(samples, 'tidemark_schedule_lag_seconds')[0]?.value ?? 0;
  const now = Date.now();
  const buckets = histogramBuckets(samples, LAG_HISTOGRAM);
  const delta = buckets === null ? null : bucketsDelta(buckets, lastBuckets);
  lastBuckets = buckets;
  let p50 = delta === null ? null : quantile(0.5, delta);
  let p99 = delta === null ? null : quantile(0.99, delta);
  let source = 'lateness of the occurrences materialised between scrapes';
  // No histogram, or nothing materialised since the last scrape: the lag gauge (the age of the oldest
  // due schedule not yet materialised) is then the lateness the next occurrence will have at least.
  if (p50 === null || p99 === null) {
    const window = [...history.slice(-(WINDOW - 1)).map((p) => p.lag), lag];
    p50 = quantileOf(0.5, window);
    p99 = quantileOf(0.99, window);
    source = `the lag gauge, sampled every ${POLL_MS / 1000} s over the last ${WINDOW} samples (no occurrence was materialised between these scrapes)`;
  }
  history.push({ t: now, lag, p50, p99 });
  if (history.length > KEEP) history.splice(0, history.length - KEEP);

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
  const recentP99 = history.at(-1)?.p99 ?? null;
  const alerting = lag > threshold || (recentP99 !== null && recentP99 > threshold);
  show(
    body,
    alerting
      ? h(
          'div',
          { class: 'alert', role: 'alert' },
          h('strong', {}, 'Schedule lag alert: '),
          `lag is ${lag.toFixed(1)} s now, p99 ${recentP99 === null ? '—' : `${recentP99.toFixed(1)} s`}, over the ${threshold} s threshold. The scheduler is falling behind or has no leader.`,
        )
      : null,
    h(
      'section',
      { class: 'cards', 'aria-label': 'Totals' },
      card('Schedule lag now', `${lag.toFixed(1)} s`, alerting ? 'bad' : 'ok'),
      card('Backlog (due, waiting)', String(total('available')), total('available') > 0 ? 'warn' : 'ok'),
      card('Running', String(total('running')), 'ok'),
      card('Dead', String(total('dead')), total('dead') > 0 ? 'bad' : 'ok'),
    ),
    h(
      'section',
      { 'aria-labelledby': 'lag-h' },
      h('h2', { id: 'lag-h' }, 'Schedule lag'),
      history.length < 2
        ? notice('Collecting samples: the chart starts after the second scrape.')
        : lineChart(
            `Schedule lag p50 and p99 over the last ${duration(now - (history[0]?.t ?? now))}`,
            [
              { label: 'p50', className: 's-p50', points: history.map((p) => ({ t: p.t, v: p.p50 })) },
              { label: 'p99', className: 's-p99', points: history.map((p) => ({ t: p.t, v: p.p99 })) },
            ],
            threshold,
          ),
      h('p', { class: 'hint' }, `Percentiles of ${source}.`),
      thresholdForm(threshold),
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

function thresholdForm(current: number): HTMLFormElement {
  const input = h('input', {
    id: 'lag-threshold',
    name: 'threshold',
    type: 'number',
    min: 1,
    step: 1,
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
  show(
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
      'Signed in with a tenant token: these are your tenant’s jobs only. Schedule lag and leadership are cluster-wide and need an admin token.',
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
