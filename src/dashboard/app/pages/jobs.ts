/// <reference lib="dom" />
/**
 * One job, and what the list shares with it: a running job shows its progress (a bar when it gives a percentage,
 * and its message), how long ago it last heartbeated, and a warning when it looks stuck; cancel,
 * confirmed; one job's attempts with their errors.
 */
import { ApiError, get, post } from '../api.ts';
import { confirmAction } from '../confirm.ts';
import { badge, bar, h, notice, show, table, update } from '../dom.ts';
import { duration, json, local, utc } from '../format.ts';
import { errorText, focusIfLost, poll, type PageContext } from '../page.ts';
import { heartbeatView, progressView } from '../progress.ts';
import type { Job, JobDetail } from '../types.ts';

/** Running jobs move: refresh often enough to watch a progress bar. */
const POLL_MS = 2000;
const FINAL = new Set(['succeeded', 'dead', 'cancelled']);

const TONE: Record<string, string> = {
  running: 'info',
  succeeded: 'ok',
  dead: 'bad',
  failed: 'warn',
  cancelled: 'muted',
  available: 'muted',
  scheduled: 'muted',
};

export function stateBadge(state: string): HTMLElement {
  return badge(state, TONE[state] ?? 'muted');
}

export function progressCell(job: Job, now: number): HTMLElement | string {
  if (job.state !== 'running') return '';
  const p = progressView(job.progress);
  const hb = heartbeatView(job, now);
  return h(
    'div',
    { class: 'progress' },
    p.percent === null
      ? null
      : bar(p.percent, {
          role: 'progressbar',
          'aria-valuemin': 0,
          'aria-valuemax': 100,
          'aria-valuenow': Math.round(p.percent),
          'aria-label': `Job ${job.id} progress`,
        }),
    p.percent === null ? null : h('span', { class: 'percent' }, `${Math.round(p.percent)}%`),
    p.message === null ? null : h('span', { class: 'progress-message' }, p.message),
    p.raw === null ? null : h('code', {}, p.raw),
    hb === null
      ? null
      : h(
          'div',
          { class: hb.stuck ? 'heartbeat stuck' : 'heartbeat' },
          `heartbeat ${duration(hb.ageMs)} ago`,
          hb.stuck
            ? h(
                'strong',
                { class: 'stuck-warning', role: 'alert' },
                hb.leaseExpired
                  ? ` — lease expired: its worker is gone or cut off; the job will be taken back and retried`
                  : ` — looks stuck: heartbeats are due every ${duration(hb.expectedMs)}`,
              )
            : null,
        ),
  );
}

export function cancelButton(job: Job, status: HTMLElement, after: () => Promise<void>): HTMLElement | null {
  if (FINAL.has(job.state)) return null;
  if (job.cancelRequestedAt !== null) return h('span', { class: 'muted' }, 'cancel requested');
  return h(
    'button',
    {
      type: 'button',
      // Keyed, so a redraw never turns this button into the one beside it (Run again).
      'data-key': 'cancel',
      'aria-label': `Cancel job ${job.id}`,
      onclick: () => {
        confirmAction(
          `Cancel job ${job.id}?`,
          job.state === 'running'
            ? `1 job (${job.kind} in ${job.queue}) is running: its handler is told to stop, and it will not be retried.`
            : `1 job (${job.kind} in ${job.queue}) will not run.`,
          'Cancel job',
        )
          .then((yes) => (yes ? post<{ previousState: string }>(`/v1/jobs/${job.id}/cancel`) : null))
          .then(async (r) => {
            if (r === null) return;
            show(status, notice(`Job ${job.id} cancelled (was ${r.previousState}).`, 'ok'));
            await after();
            focusIfLost(status);
          })
          .catch((error: unknown) => show(status, notice(errorText(error), 'error')));
      },
    },
    'Cancel',
  );
}

/** How long the current (or last) attempt ran: to now while running, to its end once finished. */
export function runTime(job: Job, now: number): string {
  if (job.startedAt === null) return '—';
  const end = job.state === 'running' || job.finishedAt === null ? now : Date.parse(job.finishedAt);
  return duration(Math.max(0, end - Date.parse(job.startedAt)));
}

/** One job: its facts, progress, attempts and payload; cancel or run again. */
export async function jobPage(ctx: PageContext, id: string): Promise<void> {
  const status = h('div', { class: 'status-line' });
  const body = h('div');
  show(ctx.main, h('p', {}, h('a', { href: '#/jobs' }, '← Jobs')), status, body);
  const refresh = async (): Promise<void> => {
    let job: JobDetail;
    try {
      job = await get<JobDetail>(`/v1/jobs/${encodeURIComponent(id)}`, ctx.signal);
    } catch (error) {
      if (error instanceof ApiError && (error.status === 404 || error.status === 400)) {
        update(body, h('h1', {}, 'Job not found'), notice(`No job ${id} is visible to this token.`, 'error'));
        return;
      }
      throw error;
    }
    const now = Date.now();
    update(
      body,
      h('h1', {}, `Job #${job.id} `, stateBadge(job.state)),
      h(
        'div',
        { class: 'actions' },
        cancelButton(job, status, refresh),
        ['dead', 'cancelled', 'failed'].includes(job.state)
          ? h(
              'button',
              {
                type: 'button',
                'data-key': 'run-again',
                onclick: () => {
                  post(`/v1/jobs/${job.id}/retry`)
                    .then(async () => {
                      show(status, notice(`Job ${job.id} queued to run again.`, 'ok'));
                      await refresh();
                      focusIfLost(status);
                    })
                    .catch((error: unknown) => show(status, notice(errorText(error), 'error')));
                },
              },
              'Run again',
            )
          : null,
      ),
      job.state === 'running'
        ? h('section', { 'aria-label': 'Progress' }, h('h2', {}, 'Progress'), progressCell(job, now))
        : null,
      h(
        'dl',
        { class: 'facts' },
        [
          ['Queue', job.queue],
          ['Kind', job.kind],
          ['Tenant', job.tenantId],
          ['Attempt', `${job.attempt} of ${job.maxAttempts}`],
          ['Priority', String(job.priority)],
          ['Run at', `${utc(job.runAt)} · ${local(job.runAt)}`],
          ['Started', utc(job.startedAt)],
          ['Finished', utc(job.finishedAt)],
          ['Run time', runTime(job, now)],
          ['Deadline per attempt', job.timeoutMs === null ? 'none' : duration(job.timeoutMs)],
          ['Worker', job.leaseOwner ?? '—'],
          ['Lease until', utc(job.leaseExpiresAt)],
          ['Idempotency key', job.idempotencyKey],
          ['Schedule', job.scheduleId ?? '—'],
        ].flatMap(([k, v]) => [h('dt', {}, k ?? ''), h('dd', {}, v ?? '')]),
        job.scheduleId === null
          ? null
          : [
              h('dt', {}, 'From schedule'),
              h('dd', {}, h('a', { href: `#/schedules/${job.scheduleId}` }, 'open')),
            ],
      ),
      job.lastError === null
        ? null
        : [h('h2', {}, 'Last error'), h('pre', { class: 'error-text' }, job.lastError)],
      h('h2', {}, 'Attempts'),
      job.attempts.length === 0
        ? notice('No attempt yet.')
        : table(
            'Attempts',
            ['#', 'Worker', 'Started (UTC)', 'Duration', 'Outcome', 'Error'],
            job.attempts.map((a) => [
              String(a.attempt),
              a.worker,
              utc(a.startedAt),
              a.durationMs === null ? (a.finishedAt === null ? 'running' : '—') : duration(a.durationMs),
              a.outcome === null
                ? '—'
                : stateBadge(
                    a.outcome === 'succeeded' ? 'succeeded' : a.outcome === 'failed' ? 'failed' : a.outcome,
                  ),
              a.error === null ? '' : h('pre', { class: 'error-text' }, a.error),
            ]),
            { class: 'attempts' },
            job.attempts.map((a) => String(a.attempt)),
          ),
      h('h2', {}, 'Payload'),
      h('pre', { class: 'json' }, json(job.payload)),
    );
  };
  poll(ctx, POLL_MS, status, refresh);
  await Promise.resolve();
}
