/// <reference lib="dom" />
/**
 * A workflow's timeline as a Gantt chart, from GET /v1/workflows/{id}/timeline: one row per node in
 * order of start, a light bar from its release to its job's first start (waiting for a worker) and
 * a bar in its state's colour from there to its last finish (or now, while it runs). The critical
 * path (the chain whose ends decided the workflow's end, computed by the server) is highlighted.
 * A row with a job links to it.
 */
import { h, svg } from './dom.ts';
import { duration, utc } from './format.ts';
import type { TimelineNode } from './types.ts';

const W = 1200;
const ROW = 24;
const LABEL_W = 190;
const RIGHT = 80;
const AXIS_H = 26;
const TICKS = 5;

const ms = (iso: string | null): number | null => (iso === null ? null : Date.parse(iso));

/** A node's state as shown: a queued node whose job has started is running. */
export function timelineState(n: TimelineNode): string {
  return n.state === 'queued' && n.jobState === 'running' ? 'running' : n.state;
}

/** Where each row starts: its job's first start, else its release; null when it has neither. */
function begin(n: TimelineNode): number | null {
  return ms(n.startedAt) ?? ms(n.releasedAt);
}

/** The rows drawn, in order of start (then key): nodes released or started. */
export function timelineRows(nodes: TimelineNode[]): TimelineNode[] {
  return nodes
    .filter((n) => begin(n) !== null)
    .sort((a, b) => (begin(a) ?? 0) - (begin(b) ?? 0) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

export function timelineLegend(): HTMLElement {
  return h(
    'ul',
    { class: 'legend timeline-legend', 'aria-label': 'Timeline' },
    h(
      'li',
      {},
      h('span', { class: 'tl-swatch tl-wait', 'aria-hidden': 'true' }),
      'released, waiting for a worker',
    ),
    h(
      'li',
      {},
      h('span', { class: 'tl-swatch ns-succeeded', 'aria-hidden': 'true' }),
      'first start to last finish, in its state’s colour (as in the graph)',
    ),
    h('li', {}, h('span', { class: 'tl-swatch tl-critical', 'aria-hidden': 'true' }), 'critical path'),
  );
}

/**
 * The Gantt chart of `nodes` (any order; those never released are left out). `now` ends the bars of
 * nodes still running.
 */
export function gantt(nodes: TimelineNode[], now: number): HTMLElement {
  const rows = timelineRows(nodes);
  // The axis starts at the earliest release: a wait bar begins there.
  const starts = rows.map((n) => Math.min(ms(n.releasedAt) ?? Infinity, begin(n) ?? now));
  const ends = rows.map((n) => ms(n.finishedAt) ?? (n.startedAt === null ? (begin(n) ?? now) : now));
  const t0 = Math.min(...starts);
  const t1 = Math.max(...ends, t0 + 1);
  const x = (t: number): number => LABEL_W + ((t - t0) / (t1 - t0)) * (W - LABEL_W - RIGHT);
  const height = AXIS_H + rows.length * ROW + 6;
  const path = rows.filter((n) => n.critical).map((n) => n.key);
  const chart = svg('svg', {
    viewBox: `0 0 ${W} ${height}`,
    role: 'group',
    class: 'timeline',
    'aria-label': `Timeline: ${rows.length} nodes over ${duration(t1 - t0)} from ${utc(new Date(t0).toISOString())}${
      path.length === 0 ? '' : `; critical path ${path.join(' → ')}`
    }`,
  });
  for (let i = 0; i <= TICKS; i++) {
    const t = t0 + ((t1 - t0) * i) / TICKS;
    chart.appendChild(svg('line', { x1: x(t), x2: x(t), y1: AXIS_H - 6, y2: height, class: 'tick' }));
    chart.appendChild(
      svg(
        'text',
        { x: x(t), y: AXIS_H - 10, class: 'axis', 'text-anchor': i === 0 ? 'start' : 'middle' },
        i === 0 ? '0' : `+${duration(t - t0)}`,
      ),
    );
  }
  rows.forEach((n, i) => {
    const y = AXIS_H + i * ROW;
    const state = timelineState(n);
    const released = ms(n.releasedAt);
    const started = ms(n.startedAt);
    const from = started ?? released ?? t0;
    const end = ends[i] ?? t1;
    const ran = started === null ? null : end - started;
    const row = svg('g', {
      class: `tl-row node-${state}${n.critical ? ' critical' : ''}`,
      'data-key': n.key,
    });
    if (n.critical) {
      row.appendChild(svg('rect', { x: 0, y, width: W, height: ROW, class: 'tl-band' }));
    }
    const key = n.key.length > 26 ? `${n.key.slice(0, 25)}…` : n.key;
    row.appendChild(svg('text', { x: 4, y: y + 16, class: 'tl-label' }, key));
    if (released !== null && started !== null && started > released) {
      row.appendChild(
        svg('rect', {
          x: x(released),
          y: y + 5,
          width: Math.max(1, x(started) - x(released)),
          height: 14,
          class: 'wait',
        }),
      );
    }
    if (started !== null) {
      row.appendChild(
        svg('rect', {
          x: x(from),
          y: y + 4,
          width: Math.max(2, x(end) - x(from)),
          height: 16,
          rx: 2,
          class: `run node-${state}`,
        }),
      );
    }
    const note =
      ran === null
        ? state
        : `${duration(ran)}${n.finishedAt === null ? ' so far' : ''}${(n.attempts ?? 0) > 1 ? `, ${n.attempts} attempts` : ''}`;
    row.appendChild(svg('text', { x: x(end) + 6, y: y + 16, class: 'axis' }, note));
    const label =
      `${n.key}: ${state}` +
      (n.jobId === null ? '' : `, job ${n.jobId}`) +
      (started === null ? ', not started' : `, started at +${duration(started - t0)}, ${note}`) +
      (n.critical ? ', on the critical path' : '');
    row.appendChild(svg('title', {}, label));
    chart.appendChild(
      n.jobId === null
        ? row
        : svg('a', { href: `#/jobs/${n.jobId}`, 'aria-label': label, class: 'tl-link' }, row),
    );
  });
  return h('div', { class: 'graph-scroll', tabindex: 0, 'aria-label': 'Workflow timeline (scrolls)' }, chart);
}
