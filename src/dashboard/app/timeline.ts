/// <reference lib="dom" />
/**
 * A workflow's critical path as a timeline: the chain of nodes that decided when it finished. It
 * ends at the node that finished last (or is still running) and walks back, at each node, to the
 * dependency that finished last, the one whose end released it. Each node is a bar from its release
 * (light: waiting for a worker) through its start to its end (its state's colour).
 */
import { h, svg } from './dom.ts';
import { duration } from './format.ts';
import { nodeState } from './graph.ts';
import type { WorkflowNode } from './types.ts';

const W = 1200;
const ROW = 26;
const LABEL_W = 180;
const PAD = 12;

const ms = (iso: string | null): number | null => (iso === null ? null : Date.parse(iso));

/** Root first. Empty when no node has started. */
export function criticalPath(nodes: WorkflowNode[], now: number): WorkflowNode[] {
  const byKey = new Map(nodes.map((n) => [n.key, n]));
  const end = (n: WorkflowNode): number | null => ms(n.finishedAt) ?? (n.startedAt === null ? null : now);
  let last: WorkflowNode | undefined;
  for (const n of nodes) {
    const e = end(n);
    if (e !== null && (last === undefined || e > (end(last) ?? 0))) last = n;
  }
  const path: WorkflowNode[] = [];
  const seen = new Set<string>();
  while (last !== undefined && !seen.has(last.key)) {
    seen.add(last.key);
    path.unshift(last);
    let next: WorkflowNode | undefined;
    for (const key of last.dependsOn) {
      const parent = byKey.get(key);
      if (parent === undefined) continue;
      if (next === undefined || (end(parent) ?? 0) > (end(next) ?? 0)) next = parent;
    }
    last = next;
  }
  return path;
}

export function timeline(path: WorkflowNode[], now: number): HTMLElement {
  const starts = path.map((n) => ms(n.releasedAt) ?? ms(n.startedAt) ?? now);
  const ends = path.map((n) => ms(n.finishedAt) ?? now);
  const t0 = Math.min(...starts);
  const t1 = Math.max(...ends, t0 + 1);
  const x = (t: number) => LABEL_W + ((t - t0) / (t1 - t0)) * (W - LABEL_W - 90);
  const height = PAD * 2 + path.length * ROW;
  const chart = svg('svg', { viewBox: `0 0 ${W} ${height}`, role: 'img', class: 'timeline' });
  chart.appendChild(
    svg(
      'title',
      {},
      `Critical path: ${path.length} nodes over ${duration(t1 - t0)}, ${path.map((n) => n.key).join(' → ')}`,
    ),
  );
  path.forEach((n, i) => {
    const y = PAD + i * ROW;
    const released = starts[i] ?? t0;
    const started = ms(n.startedAt);
    const ended = ends[i] ?? t1;
    const key = n.key.length > 24 ? `${n.key.slice(0, 23)}…` : n.key;
    chart.appendChild(svg('text', { x: 0, y: y + 16, class: 'axis' }, key));
    if (started !== null && started > released) {
      chart.appendChild(
        svg('rect', {
          x: x(released),
          y: y + 4,
          width: Math.max(1, x(started) - x(released)),
          height: 16,
          class: 'wait',
        }),
      );
    }
    const from = started ?? released;
    chart.appendChild(
      svg('rect', {
        x: x(from),
        y: y + 4,
        width: Math.max(2, x(ended) - x(from)),
        height: 16,
        class: `run node-${nodeState(n)}`,
      }),
    );
    chart.appendChild(svg('text', { x: x(ended) + 6, y: y + 16, class: 'axis' }, duration(ended - from)));
  });
  return h('div', { class: 'graph-scroll' }, chart);
}
