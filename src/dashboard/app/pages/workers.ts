/// <reference lib="dom" />
/**
 * Workers and queues (admin): the worker registry (each process's host, pid, version, queues with
 * slots used of total, when it started and last heartbeated, and what it runs now; stopped and lost
 * ones marked), each queue's limit and retry policy with pause, resume and an editor, every change
 * confirmed with what it changes, and the queues' audited changes (who, when, before and after).
 */
import { ApiError, get, patch, post } from '../api.ts';
import { confirmAction, openModal } from '../confirm.ts';
import { badge, h, notice, show, table, update } from '../dom.ts';
import { fieldErrorsClear, fieldErrorsShow, labelledField } from '../fields.ts';
import { ago, duration, local, utc } from '../format.ts';
import { errorText, missingRoutes, poll, type PageContext } from '../page.ts';

const POLL_MS = 3000;
const ROUTES = [
  'GET /v1/workers',
  'GET /v1/queues',
  'POST /v1/queues/{name}/pause',
  'PATCH /v1/queues/{name}',
];
/** Changes read per queue each poll; the page shows the newest of them all. */
const CHANGES_PER_QUEUE = 20;
const CHANGES_SHOWN = 30;

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

type SettingKey = 'maxRunning' | 'maxAttempts' | 'backoffBaseMs' | 'backoffMaxMs' | 'timeoutMs';
interface Settings {
  maxRunning: number | null;
  maxAttempts: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  timeoutMs: number | null;
}

interface Queue extends Settings {
  name: string;
  paused: boolean;
  pausedAt: string | null;
  pausedBy: string | null;
}

interface Change {
  at: string;
  by: string;
  change: 'pause' | 'resume' | 'update';
  before: Settings & { paused: boolean };
  after: Settings & { paused: boolean };
}

/** The queue settings schema (src/worker/queue-settings.ts) as an operator edits it. */
const SETTINGS: { key: SettingKey; label: string; hint: string; ms: boolean; nullable: boolean }[] = [
  {
    key: 'maxRunning',
    label: 'Max running',
    hint: 'cluster-wide cap on running jobs; empty: no cap. Applies to the next claims.',
    ms: false,
    nullable: true,
  },
  {
    key: 'maxAttempts',
    label: 'Max attempts',
    hint: 'attempts before the dead letter, for jobs enqueued from now on',
    ms: false,
    nullable: false,
  },
  {
    key: 'backoffBaseMs',
    label: 'Backoff base (ms)',
    hint: 'first retry delay, doubling each attempt with jitter; for retries from now on',
    ms: true,
    nullable: false,
  },
  {
    key: 'backoffMaxMs',
    label: 'Backoff max (ms)',
    hint: 'longest retry delay, at least the base',
    ms: true,
    nullable: false,
  },
  {
    key: 'timeoutMs',
    label: 'Timeout (ms)',
    hint: 'deadline per attempt for jobs without their own; empty: none. Applies to attempts started from now on.',
    ms: true,
    nullable: true,
  },
];

function settingText(key: SettingKey, value: number | null): string {
  if (value === null) return 'none';
  const ms = SETTINGS.find((s) => s.key === key)?.ms === true;
  return ms && value >= 1000 ? `${value} ms (${duration(value)})` : ms ? `${value} ms` : String(value);
}

/** "maxAttempts 4 → 6" for each setting that differs. */
function settingChanges(before: Settings, after: Partial<Settings>): string[] {
  return SETTINGS.filter(({ key }) => key in after && after[key] !== before[key]).map(
    ({ key }) => `${key} ${settingText(key, before[key])} → ${settingText(key, after[key] ?? null)}`,
  );
}

function changeText(c: Change): string {
  if (c.change === 'pause') return 'paused';
  if (c.change === 'resume') return 'resumed';
  return settingChanges(c.before, c.after).join('; ') || 'no setting changed';
}

function policyView(q: Queue): HTMLElement {
  return h(
    'span',
    {},
    [
      `max running ${q.maxRunning ?? 'none'}`,
      `${q.maxAttempts} attempts`,
      `backoff ${duration(q.backoffBaseMs)} to ${duration(q.backoffMaxMs)}`,
      `timeout ${q.timeoutMs === null ? 'none' : duration(q.timeoutMs)}`,
    ].map((text) => h('span', { class: 'slot' }, text)),
  );
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
  const audit = h('div');
  show(
    ctx.main,
    h('h1', {}, 'Workers'),
    status,
    workers,
    h('h2', {}, 'Queues'),
    queues,
    h('h2', { id: 'queue-changes-h' }, 'Queue changes'),
    audit,
  );
  const edited = async (text: string): Promise<void> => {
    show(status, notice(text, 'ok'));
    await refresh();
  };
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
        get<{ changes: Change[] }>(
          `/v1/queues/${encodeURIComponent(queue.name)}/changes?limit=${CHANGES_PER_QUEUE}`,
          ctx.signal,
        ),
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
            ['Queue', 'State', 'Limit and retry policy', 'Last change', ''],
            q.items.map((x, i) => {
              const last = changes[i]?.changes[0];
              return [
                h('a', { href: `#/jobs?queue=${encodeURIComponent(x.name)}` }, x.name),
                x.paused ? badge(`paused by ${x.pausedBy ?? '?'}`, 'warn') : badge('running', 'ok'),
                policyView(x),
                last === undefined ? '—' : `${last.change} by ${last.by}, ${ago(last.at, now)}`,
                h(
                  'div',
                  { class: 'actions' },
                  h(
                    'button',
                    {
                      type: 'button',
                      onclick: () => pauseOrResume(x),
                      'aria-label': `${x.paused ? 'Resume' : 'Pause'} queue ${x.name}`,
                    },
                    x.paused ? 'Resume' : 'Pause',
                  ),
                  h(
                    'button',
                    {
                      type: 'button',
                      onclick: (event: Event) => queueEdit(x, event.currentTarget as HTMLElement, edited),
                      'aria-label': `Edit queue ${x.name}`,
                    },
                    'Edit',
                  ),
                ),
              ];
            }),
            { class: 'queue-controls' },
            q.items.map((x) => x.name),
          ),
    );
    const all = changes
      .flatMap((c, i) => c.changes.map((change) => ({ ...change, queue: q.items[i]?.name ?? '' })))
      .sort((a, b) => b.at.localeCompare(a.at))
      .slice(0, CHANGES_SHOWN);
    update(
      audit,
      all.length === 0
        ? notice('No queue has been changed.')
        : table(
            'Queue changes, newest first',
            ['When', 'Queue', 'Who', 'Change', 'Before → after'],
            all.map((c) => [
              h('time', { datetime: c.at, title: `${utc(c.at)} · ${local(c.at)}` }, ago(c.at, now)),
              c.queue,
              c.by,
              c.change,
              changeText(c),
            ]),
            { class: 'queue-changes', 'aria-labelledby': 'queue-changes-h' },
            all.map((c) => `${c.queue} ${c.at} ${c.change}`),
          ),
    );
  };
  poll(ctx, POLL_MS, status, refresh);
  await Promise.resolve();
}

/**
 * The settings editor: a modal form with the queue's settings as they were when it opened. Review
 * asks for a confirmation that lists each change (old → new); the PATCH sends only those fields, so
 * a setting someone else changed meanwhile is kept. The API's refusals show under their fields.
 */
function queueEdit(q: Queue, opener: HTMLElement, done: (text: string) => Promise<void>): void {
  const inputs = Object.fromEntries(
    SETTINGS.map(({ key }) => [
      key,
      h('input', {
        id: `queue-${key}`,
        name: key,
        value: q[key] === null ? '' : String(q[key]),
        inputmode: 'numeric',
        autocomplete: 'off',
      }),
    ]),
  ) as Record<SettingKey, HTMLInputElement>;
  const formStatus = h('div', { 'aria-live': 'polite' });
  const cancel = h('button', { type: 'button', class: 'secondary' }, 'Cancel');
  const review = h('button', { type: 'submit' }, 'Review change');
  const dialog = h(
    'dialog',
    { class: 'confirm queue-edit', 'aria-labelledby': 'queue-edit-h' },
    h('h2', { id: 'queue-edit-h' }, `Edit queue ${q.name}`),
    h(
      'form',
      {
        novalidate: true,
        onsubmit: (event: Event) => {
          event.preventDefault();
          submit();
        },
      },
      h(
        'div',
        { class: 'grid-fields two' },
        SETTINGS.map((s) => labelledField(inputs[s.key], s.label, s.hint)),
      ),
      formStatus,
      h('div', { class: 'actions' }, cancel, review),
    ),
  );
  cancel.addEventListener('click', () => dialog.close());

  /** The form's values: digits become numbers, an empty nullable field null; anything else is sent as typed, for the API to name. */
  const wanted = (): Partial<Record<SettingKey, number | string | null>> => {
    const out: Partial<Record<SettingKey, number | string | null>> = {};
    for (const { key, nullable } of SETTINGS) {
      const text = inputs[key].value.trim();
      const value = text === '' && nullable ? null : /^-?\d{1,15}$/.test(text) ? Number(text) : text;
      if (value !== q[key]) out[key] = value;
    }
    return out;
  };

  const submit = (): void => {
    fieldErrorsClear(Object.values(inputs));
    formStatus.replaceChildren();
    const body = wanted();
    const lines = SETTINGS.filter(({ key }) => key in body).map(({ key }) => {
      const v = body[key];
      return `${key}: ${settingText(key, q[key])} → ${typeof v === 'string' ? JSON.stringify(v) : settingText(key, v ?? null)}`;
    });
    if (lines.length === 0) {
      formStatus.replaceChildren(notice('Nothing to change: every field holds the current value.'));
      return;
    }
    void confirmAction(
      `Change queue ${q.name}?`,
      h(
        'div',
        {},
        h(
          'ul',
          { class: 'change-list' },
          lines.map((l) => h('li', {}, l)),
        ),
        h('p', {}, 'Every worker applies the new settings at once; the change is recorded with your token.'),
      ),
      `Change ${lines.length === 1 ? 'it' : `${lines.length} settings`}`,
    ).then(async (yes) => {
      if (!yes) return;
      review.disabled = true;
      try {
        const after = await patch<Queue>(`/v1/queues/${encodeURIComponent(q.name)}`, body);
        dialog.close();
        await done(`Queue ${q.name} changed: ${settingChanges(q, after).join('; ')}.`);
      } catch (error) {
        const rest = error instanceof ApiError ? fieldErrorsShow(inputs, error.fields, 'body.') : [];
        if (!(error instanceof ApiError) || rest.length > 0 || error.fields.length === 0) {
          const text =
            error instanceof ApiError && rest.length > 0
              ? rest.map((f) => `${f.field}: ${f.reason}`).join('; ')
              : errorText(error);
          formStatus.replaceChildren(notice(`Not changed: ${text}`, 'error'));
        }
      } finally {
        review.disabled = false;
      }
    });
  };

  openModal(dialog, () => undefined, opener);
  inputs.maxRunning.focus();
}
