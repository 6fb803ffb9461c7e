/// <reference lib="dom" />
/**
 * A workflow drawn as a layered DAG: each node in the column of its longest path from a root, so
 * every edge points right. Meant for workflows of up to a few hundred nodes (GRAPH_MAX); beyond that
 * a drawing is unreadable and the page shows counts per state and a paged node list instead.
 * Each state has its own colour and the legend names them; a node with a job links to it.
 */
import { h, svg } from './dom.ts';
import type { WorkflowNode } from './types.ts';

export const GRAPH_MAX = 300;

/** Every state a node is shown in, in the order a node moves through them. */
export const NODE_STATES = [
  'pending',
  'waiting',
  'queued',
  'running',
  'succeeded',
  'failed',
  'skipped',
  'cancelled',
] as const;

const STATE_MEANS: Record<string, string> = {
  pending: 'waits for its dependencies',
  waiting: 'waits for a signal',
  queued: 'job enqueued, not started',
  running: 'job running',
  succeeded: 'done',
  failed: 'failed',
  skipped: 'skipped: a dependency failed',
  cancelled: 'cancelled',
};

/** A node's state as shown: a queued node whose job has started is running. */
export function nodeState(n: WorkflowNode): string {
  return n.state === 'queued' && n.jobState === 'running' ? 'running' : n.state;
}

export function nodeLegend(): HTMLElement {
  return h(
    'ul',
    { class: 'legend node-legend', 'aria-label': 'Node states' },
    NODE_STATES.map((state) =>
      h(
        'li',
        { title: STATE_MEANS[state] },
        h('span', { class: `node-swatch ns-${state}`, 'aria-hidden': 'true' }),
        state,
      ),
    ),
  );
}

const COL = 170;
const ROW = 34;
const NODE_W = 140;
const NODE_H = 24;

/** Column of each node: 0 for roots, else one more than its deepest parent. Input is acyclic (checked at submit). */
export function layers(nodes: WorkflowNode[]): Map<string, number> {
  const byKey = new Map(nodes.map((n) => [n.key, n]));
  const depth = new Map<string, number>();
  const visit = (key: string, seen: Set<string>): number => {
    const known = depth.get(key);
    if (known !== undefined) return known;
    if (seen.has(key)) return 0;
    seen.add(key);
    const parents = (byKey.get(key)?.dependsOn ?? []).filter((p) => byKey.has(p));
    const d = parents.length === 0 ? 0 : 1 + Math.max(...parents.map((p) => visit(p, seen)));
    depth.set(key, d);
    return d;
  };
  for (const n of nodes) visit(n.key, new Set());
  return depth;
}

/**
 * An edge from a parent's right side to a child's left side. One that skips columns would run
 * straight under the boxes in between (drawn on top), so it leaves the parent, runs along the
 * gap above the parent's row to the child's column, and enters the child from there.
 */
function edgePoints(from: { x: number; y: number }, to: { x: number; y: number }): string {
  const start = `${from.x + NODE_W},${from.y + NODE_H / 2}`;
  const end = `${to.x},${to.y + NODE_H / 2}`;
  if (to.x - from.x <= COL) return `${start} ${end}`;
  const gapY = from.y - (ROW - NODE_H) / 2;
  const outX = from.x + NODE_W + (COL - NODE_W) / 2;
  const inX = to.x - (COL - NODE_W) / 2;
  return `${start} ${outX},${gapY} ${inX},${gapY} ${end}`;
}

export function workflowGraph(nodes: WorkflowNode[]): HTMLElement {
  const depth = layers(nodes);
  const columns: WorkflowNode[][] = [];
  for (const n of nodes) (columns[depth.get(n.key) ?? 0] ??= []).push(n);
  const pos = new Map<string, { x: number; y: number }>();
  columns.forEach((col, c) => col.forEach((n, r) => pos.set(n.key, { x: 10 + c * COL, y: 10 + r * ROW })));
  const width = 20 + Math.max(1, columns.length) * COL;
  const height = 20 + Math.max(1, ...columns.map((c) => c.length)) * ROW;

  const root = svg('svg', {
    viewBox: `0 0 ${width} ${height}`,
    width,
    height,
    role: 'img',
    class: 'graph',
  });
  root.appendChild(svg('title', {}, `Workflow graph: ${nodes.length} nodes in ${columns.length} columns`));
  for (const n of nodes) {
    const to = pos.get(n.key);
    for (const p of n.dependsOn) {
      const from = pos.get(p);
      if (from === undefined || to === undefined) continue;
      root.appendChild(svg('polyline', { points: edgePoints(from, to), class: 'edge' }));
    }
  }
  for (const n of nodes) {
    const at = pos.get(n.key);
    if (at === undefined) continue;
    const label = n.key.length > 18 ? `${n.key.slice(0, 17)}…` : n.key;
    const state = nodeState(n);
    const box = svg(
      'g',
      { class: `node node-${state}`, transform: `translate(${at.x},${at.y})` },
      svg('title', {}, `${n.key}: ${state}`),
      svg('rect', { width: NODE_W, height: NODE_H, rx: 4 }),
      svg('text', { x: 8, y: 16 }, label),
    );
    root.appendChild(
      n.jobId === null
        ? box
        : svg(
            'a',
            {
              href: `#/jobs/${n.jobId}`,
              'aria-label': `${n.key}: ${state}, job ${n.jobId}`,
              class: 'node-link',
            },
            box,
          ),
    );
  }
  return h('div', { class: 'graph-scroll', tabindex: 0, 'aria-label': 'Workflow graph (scrolls)' }, root);
}
