/// <reference lib="dom" />
/**
 * Workers and queues (admin): the worker registry (each process's host, pid, version, queues with
 * slots used of total, when it started and last heartbeated, and what it runs now; stopped and lost
 * ones marked), and each queue's pause state with pause and resume, confirmed, and its audited
 * changes (who, when, what).
 */
import { get, post } from '../api.ts';
import { confirmAction } from '../confirm.ts';
import { badge, h, notice, show, table, update } from '../dom.ts';
import { ago, local } from '../format.ts';
import { errorText, missingRoutes, poll, type PageContext } from '../page.ts';

const POLL_MS = 3000;
const ROUTES = ['GET /v1/workers', 'GET /v1/queues', 'POST /v1/queues/{name}/pause'];

interface Worker {
  id: string;
  host: string;
  pid: number;
  version: string;
  startedAt: string;
  heartbeatAt: string;
  stoppedAt: string | null;
  state: string;
  queues: { name: string; concurrency: number; running: number }[];
  running: { jobId: number; queue: string; kind: string; tenantId: string; startedAt: string }[];
}

interface Queue {
  name: string;
  paused: boolean;
  pausedAt: string | null;
  pausedBy: string | null;
}

interface Change {
  at: string;
  by: string;
  change: string;
}

const TONE: Record<string, string> = { running: 'ok', stopped: 'muted', lost: 'bad' };

export async function workersPage(ctx: PageContext): Promise<void> {
  const missing = missingRoutes(ctx, ROUTES);
  if (!ctx.session.admin || missing.length > 0) {
    show(
      ctx.main,
      h('h1', {}, 'Workers'),
      notice(
        ctx.session.admin
          ? `This server has no worker registry (${missing.join(', ')}).`
          : 'Workers and queues are cluster-wide: they need an admin token.',
        'error',
      ),
    );
    return;
  }
  const status = h('div', { class: 'status-line', 'aria-live': 'polite' });
  const workers = h('div');
  const queues = h('div');
  show(ctx.main, h('h1', {}, 'Workers'), status, workers, h('h2', {}, 'Queues'), queues);
  const pauseOrResume = (q: Queue): void => {
    const action = q.paused ? 'resume' : 'pause';
    void confirmAction(
      `${q.paused ? 'Resume' : 'Pause'} queue ${q.name}?`,
      q.paused
        ? 'Workers everywhere start claiming its jobs again at once.'
        : 'No worker anywhere claims its jobs until it is resumed; running jobs finish.',
      q.paused ? 'Resume queue' : 'Pause queue',
    ).then(async (yes) => {
      if (!yes) return;
      try {
        await post(`/v1/queues/${encodeURIComponent(q.name)}/${action}`);
        show(status, notice(`Queue ${q.name} ${q.paused ? 'resumed' : 'paused'}.`, 'ok'));
        await refresh();
      } catch (error) {
        show(status, notice(errorText(error), 'error'));
      }
    });
  };
  const refresh = async (): Promise<void> => {
    const [w, q] = await Promise.all([
      get<{ workers: Worker[] }>('/v1/workers', ctx.signal),
      get<{ items: Queue[] }>('/v1/queues', ctx.signal),
    ]);
    const changes = await Promise.all(
      q.items.map((queue) =>
        get<{ changes: Change[] }>(`/v1/queues/${encodeURIComponent(queue.name)}/changes`, ctx.signal),
      ),
    );
    const now = Date.now();
    update(
      workers,
      w.workers.length === 0
        ? notice('No worker has registered.')
        : table(
            'Worker processes',
            [
              'Worker',
              'State',
              'Host',
              'PID',
              'Version',
              'Queues (running / slots)',
              'Running now',
              'Started',
              'Heartbeat',
            ],
            w.workers.map((x) => [
              x.id,
              badge(x.state, TONE[x.state] ?? 'muted'),
              x.host,
              String(x.pid),
              x.version,
              h(
                'span',
                {},
                x.queues.map((s) =>
                  h('span', { class: 'slot' }, `${s.name} ${s.running} / ${s.concurrency}`),
                ),
              ),
              x.running.length === 0
                ? '—'
                : h(
                    'span',
                    {},
                    x.running.map((r) =>
                      h('a', { href: `#/jobs/${r.jobId}`, class: 'slot' }, `#${r.jobId} ${r.kind}`),
                    ),
                  ),
              h('time', { datetime: x.startedAt, title: local(x.startedAt) }, ago(x.startedAt, now)),
              x.stoppedAt === null
                ? h('time', { datetime: x.heartbeatAt, title: local(x.heartbeatAt) }, ago(x.heartbeatAt, now))
                : `stopped ${ago(x.stoppedAt, now)}`,
            ]),
            { class: 'workers' },
            w.workers.map((x) => x.id),
          ),
    );
    update(
      queues,
      q.items.length === 0
        ? notice('No queue has settings yet.')
        : table(
            'Queues',
            ['Queue', 'State', 'Last change', ''],
            q.items.map((x, i) => {
              const last = changes[i]?.changes[0];
              return [
                h('a', { href: `#/jobs?queue=${encodeURIComponent(x.name)}` }, x.name),
                x.paused ? badge(`paused by ${x.pausedBy ?? '?'}`, 'warn') : badge('running', 'ok'),
                last === undefined ? '—' : `${last.change} by ${last.by}, ${ago(last.at, now)}`,
                h(
                  'button',
                  {
                    type: 'button',
                    onclick: () => pauseOrResume(x),
                    'aria-label': `${x.paused ? 'Resume' : 'Pause'} queue ${x.name}`,
                  },
                  x.paused ? 'Resume' : 'Pause',
                ),
              ];
            }),
            { class: 'queue-controls' },
            q.items.map((x) => x.name),
          ),
    );
  };
  poll(ctx, POLL_MS, status, refresh);
  await Promise.resolve();
}
