/// <reference lib="dom" />
/**
 * Line charts in SVG for the overview (lag p50/p99, throughput, backlog), with an optional dashed
 * alert line. Hand-written rather than a charting library: a few series and one rule line do not
 * justify shipping a dependency to every browser, and each figure is also given as text.
 *
 * The y-axis is scaled to the data, not to the alert line: lag of 40 ms under a 15 s alert would
 * otherwise be a flat line at zero with p50 hidden under p99. The alert line is drawn when it falls
 * inside the data's range and named in the legend either way.
 */
import { h, svg } from './dom.ts';

export interface Series {
  label: string;
  className: string;
  points: { t: number; v: number | null }[];
}

export interface ChartOptions {
  /** Axis label suffix: 's' for seconds, '' for counts. */
  unit: string;
  /** The alert threshold, in the series' unit. */
  threshold?: number | null;
  /** Smallest top of the axis, so a quiet series does not magnify noise (default 1 unit). */
  minTop?: number;
}

const W = 1200;
const H = 220;
const PAD = { left: 56, right: 12, top: 12, bottom: 28 };

/** The top of the axis: the smallest of these × 10^n at or above `v`, each a quarter of which is round. */
const TOPS = [1, 1.2, 1.6, 2, 2.4, 3, 4, 6, 8, 10];

export function niceTop(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return Number(((TOPS.find((m) => m * p >= v) ?? 10) * p).toPrecision(6));
}

function label(v: number, unit: string): string {
  const text = String(Number(v.toFixed(3)));
  return unit === '' ? text : `${text} ${unit}`;
}

export function lineChart(title: string, series: Series[], options: ChartOptions): HTMLElement {
  const threshold = options.threshold ?? null;
  const all = series.flatMap((s) => s.points);
  const ts = all.map((p) => p.t);
  const values = all.flatMap((p) => (p.v === null ? [] : [p.v]));
  const tMin = Math.min(...ts);
  const tMax = Math.max(...ts);
  let vMax = niceTop(Math.max(options.minTop ?? 1, ...values) * 1.05);
  // Counts get whole-number grid lines.
  if (options.unit === '') vMax = Math.max(4, Math.ceil(vMax / 4) * 4);
  const x = (t: number) => PAD.left + ((t - tMin) / Math.max(1, tMax - tMin)) * (W - PAD.left - PAD.right);
  const y = (v: number) => H - PAD.bottom - (v / vMax) * (H - PAD.top - PAD.bottom);
  const thresholdShown = threshold !== null && threshold <= vMax;

  const chart = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', class: 'chart', 'data-top': vMax });
  chart.appendChild(svg('title', {}, title));
  for (let i = 0; i <= 4; i++) {
    const v = (vMax / 4) * i;
    chart.appendChild(svg('line', { x1: PAD.left, x2: W - PAD.right, y1: y(v), y2: y(v), class: 'grid' }));
    chart.appendChild(
      svg(
        'text',
        { x: PAD.left - 6, y: y(v) + 4, class: 'axis', 'text-anchor': 'end' },
        label(v, options.unit),
      ),
    );
  }
  if (ts.length > 0) {
    for (let i = 0; i <= 6; i++) {
      const t = tMin + ((tMax - tMin) * i) / 6;
      const text = new Date(t).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
      const anchor = i === 0 ? 'start' : i === 6 ? 'end' : 'middle';
      chart.appendChild(svg('text', { x: x(t), y: H - 8, class: 'axis', 'text-anchor': anchor }, text));
    }
  }
  if (thresholdShown) {
    chart.appendChild(
      svg('line', {
        x1: PAD.left,
        x2: W - PAD.right,
        y1: y(threshold),
        y2: y(threshold),
        class: 'threshold',
      }),
    );
  }
  for (const s of series) {
    // A gap in the data (a minute with no sample) breaks the line instead of bridging it.
    let pen = 'M';
    const parts: string[] = [];
    for (const p of s.points) {
      if (p.v === null) {
        pen = 'M';
        continue;
      }
      parts.push(`${pen}${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`);
      pen = 'L';
    }
    if (parts.length > 0)
      chart.appendChild(svg('path', { d: parts.join(' '), class: `series ${s.className}` }));
  }
  const legend = h(
    'ul',
    { class: 'legend' },
    series.map((s) => h('li', {}, h('span', { class: `swatch ${s.className}` }), s.label)),
    threshold === null
      ? null
      : h(
          'li',
          {},
          h('span', { class: 'swatch threshold' }),
          `alert at ${label(threshold, options.unit)}${thresholdShown ? '' : ' (above this range)'}`,
        ),
  );
  return h('figure', { class: 'chart-figure' }, chart, legend);
}
