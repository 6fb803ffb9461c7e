/// <reference lib="dom" />
/**
 * A line chart in SVG for the overview's lag p50/p99, with a dashed line at the alert threshold.
 * Hand-written rather than a charting library: two series and one rule line do not justify shipping
 * a dependency to every browser, and the figure is also given as text for screen readers.
 */
import { h, svg } from './dom.ts';

export interface Series {
  label: string;
  className: string;
  points: { t: number; v: number | null }[];
}

const W = 1200;
const H = 220;
const PAD = { left: 48, right: 12, top: 12, bottom: 28 };

export function lineChart(title: string, series: Series[], threshold: number | null): HTMLElement {
  const all = series.flatMap((s) => s.points);
  const ts = all.map((p) => p.t);
  const values = all.flatMap((p) => (p.v === null ? [] : [p.v]));
  const tMin = Math.min(...ts);
  const tMax = Math.max(...ts);
  const vMax = Math.max(1, threshold ?? 0, ...values) * 1.1;
  const x = (t: number) => PAD.left + ((t - tMin) / Math.max(1, tMax - tMin)) * (W - PAD.left - PAD.right);
  const y = (v: number) => H - PAD.bottom - (v / vMax) * (H - PAD.top - PAD.bottom);

  const chart = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', class: 'chart' });
  chart.appendChild(svg('title', {}, title));
  for (let i = 0; i <= 4; i++) {
    const v = (vMax / 4) * i;
    chart.appendChild(svg('line', { x1: PAD.left, x2: W - PAD.right, y1: y(v), y2: y(v), class: 'grid' }));
    chart.appendChild(
      svg(
        'text',
        { x: PAD.left - 6, y: y(v) + 4, class: 'axis', 'text-anchor': 'end' },
        `${v.toFixed(v < 10 ? 1 : 0)} s`,
      ),
    );
  }
  if (ts.length > 0) {
    for (const t of [tMin, tMax]) {
      const label = new Date(t).toLocaleTimeString();
      chart.appendChild(
        svg('text', { x: x(t), y: H - 8, class: 'axis', 'text-anchor': t === tMin ? 'start' : 'end' }, label),
      );
    }
  }
  if (threshold !== null) {
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
    const d = s.points
      .filter((p): p is { t: number; v: number } => p.v !== null)
      .map((p, i) => `${i === 0 ? 'M' : 'L'}${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`)
      .join(' ');
    if (d !== '') chart.appendChild(svg('path', { d, class: `series ${s.className}` }));
  }
  const legend = h(
    'ul',
    { class: 'legend' },
    series.map((s) => h('li', {}, h('span', { class: `swatch ${s.className}` }), s.label)),
    threshold === null
      ? null
      : h('li', {}, h('span', { class: 'swatch threshold' }), `alert at ${threshold} s`),
  );
  return h('figure', { class: 'chart-figure' }, chart, legend);
}
