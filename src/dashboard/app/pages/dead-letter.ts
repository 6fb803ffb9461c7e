/// <reference lib="dom" />
/** Dead letter: jobs that ran out of attempts, with their last error; re-run one or a selection. */
import { get, post, query } from '../api.ts';
import { confirmAction } from '../confirm.ts';
import { h, notice, show } from '../dom.ts';
import { ago, firstLine, local } from '../format.ts';
import { errorText, focusIfLost, type PageContext } from '../page.ts';
import type { Job, Page } from '../types.ts';

interface RetryResult {
  retried: number[];
  notRetried: number[];
}

export async function deadLetterPage(ctx: PageContext): Promise<void> {
  const queue = ctx.query.get('queue') ?? '';
  const status = h('div', { class: 'status-line', 'aria-live': 'polite' });
  const list = h('div');
  show(ctx.main, h('h1', {}, 'Dead letter'), status, list);

  const load = async (): Promise<void> => {
    const page = await get<Page<Job>>(`/v1/dead-letter${query({ queue, limit: 200 })}`, ctx.signal);
    render(page.items);
  };

  const retry = (ids: number[]): void => {
    post<RetryResult>('/v1/dead-letter/retry', { ids })
      .then(async (r) => {
        const skipped =
          r.notRetried.length === 0 ? '' : ` ${r.notRetried.length} were no longer dead and were left alone.`;
        show(
          status,
          h(
            'p',
            { class: 'notice notice-ok', role: 'status' },
            `Re-ran ${r.retried.length} job${r.retried.length === 1 ? '' : 's'}: ${r.retried.map((i) => `#${i}`).join(', ')}.${skipped}`,
          ),
        );
        await load();
        focusIfLost(status);
      })
      .catch((error: unknown) => show(status, notice(errorText(error), 'error')));
  };

  function render(items: Job[]): void {
    if (items.length === 0) {
      show(list, notice(queue === '' ? 'The dead letter is empty.' : `No dead jobs in queue ${queue}.`));
      return;
    }
    const now = Date.now();
    const boxes = items.map((j) =>
      h('input', { type: 'checkbox', value: j.id, 'aria-label': `Select job ${j.id}` }),
    );
    const selectAll = h('input', {
      type: 'checkbox',
      'aria-label': 'Select all dead jobs shown',
      onchange: (e: Event) => {
        for (const b of boxes) b.checked = (e.target as HTMLInputElement).checked;
        sync();
      },
    });
    const rerunSelected = h(
      'button',
      {
        type: 'button',
        disabled: true,
        onclick: () => {
          const ids = boxes.filter((b) => b.checked).map((b) => Number(b.value));
          void confirmAction(
            `Re-run ${ids.length} dead job${ids.length === 1 ? '' : 's'}?`,
            `${ids.length} job${ids.length === 1 ? '' : 's'} go back to the queue with a fresh set of attempts.`,
            `Re-run ${ids.length}`,
          ).then((yes) => {
            if (yes) retry(ids);
          });
        },
      },
      'Re-run selected',
    );
    const sync = (): void => {
      const n = boxes.filter((b) => b.checked).length;
      rerunSelected.disabled = n === 0;
      rerunSelected.textContent = n === 0 ? 'Re-run selected' : `Re-run selected (${n})`;
    };
    for (const b of boxes) b.addEventListener('change', sync);
    show(
      list,
      h('div', { class: 'toolbar' }, rerunSelected),
      h(
        'table',
        { class: 'dead' },
        h('caption', { class: 'visually-hidden' }, 'Dead jobs, newest first'),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', { scope: 'col' }, selectAll),
            ['Job', 'Queue', 'Kind', 'Tenant', 'Attempts', 'Died', 'Last error', ''].map((t) =>
              h('th', { scope: 'col' }, t),
            ),
          ),
        ),
        h(
          'tbody',
          {},
          items.map((j, i) =>
            h(
              'tr',
              {},
              h('td', {}, boxes[i] ?? null),
              h('td', {}, h('a', { href: `#/jobs/${j.id}` }, `#${j.id}`)),
              h('td', {}, j.queue),
              h('td', {}, j.kind),
              h('td', {}, j.tenantId),
              h('td', {}, String(j.attempt)),
              h(
                'td',
                {},
                j.finishedAt === null
                  ? '—'
                  : h('time', { datetime: j.finishedAt, title: local(j.finishedAt) }, ago(j.finishedAt, now)),
              ),
              h('td', {}, errorSummary(j.lastError)),
              h(
                'td',
                {},
                h(
                  'button',
                  { type: 'button', 'aria-label': `Re-run job ${j.id}`, onclick: () => retry([j.id]) },
                  'Re-run',
                ),
              ),
            ),
          ),
        ),
      ),
    );
  }

  try {
    await load();
  } catch (error) {
    show(status, notice(errorText(error), 'error'));
  }
}

/** The error's first line; a multi-line one (a stack trace) opens to its whole text on demand. */
export function errorSummary(error: string | null): HTMLElement | string {
  if (error === null) return '';
  if (!error.includes('\n')) return h('span', { class: 'error-text' }, error);
  return h(
    'details',
    { class: 'error-more' },
    h('summary', { class: 'error-text' }, firstLine(error)),
    h('pre', { class: 'error-text' }, error),
  );
}
