/// <reference lib="dom" />
/**
 * Schedules: register one from a spec or a plain-English phrase (the answer shows what it compiled
 * to and the next fire times), list with next fire times in the schedule's own zone and UTC, pause, resume,
 * trigger now; and one schedule's page: edit, delete, backfill a past range, and its occurrence
 * ledger with on-time, late, skipped, missed, manual and backfilled marked.
 */
import { ApiError, del, get, patch, post, query } from '../api.ts';
import { confirmAction } from '../confirm.ts';
import { badge, h, notice, show, table, update } from '../dom.ts';
import { formTexts } from '../fields.ts';
import { duration, inZone, utc } from '../format.ts';
import { errorText, focusIfLost, missingRoutes, poll, type PageContext } from '../page.ts';
import type { Backfill, Occurrence, Page, Schedule } from '../types.ts';

const ROUTES = ['GET /v1/schedules', 'POST /v1/schedules'];
const POLL_MS = 3000;
/**
 * An occurrence decided within this long of its fire time is on time: the scheduler ticks every
 * second (SCHEDULER_DEFAULTS.tickMs), so up to a tick plus a database round trip is normal.
 */
export const LATE_AFTER_MS = 2000;

/** A button goes to the tenant chosen: a select that navigated on change took keyboard users away at the first arrow key. */
function tenantPicker(ctx: PageContext, current: string): HTMLElement | null {
  if (!ctx.session.admin) return null;
  const select = h(
    'select',
    { id: 'schedule-tenant' },
    ['default', ...ctx.session.tenants.filter((t) => t !== 'default')].map((t) =>
      h('option', { value: t, selected: t === current }, t),
    ),
  );
  return h(
    'form',
    {
      class: 'filters',
      'aria-label': 'Schedules of tenant',
      onsubmit: (event: Event) => {
        event.preventDefault();
        location.hash = `#/schedules${query({ tenant: select.value })}`;
      },
    },
    h('label', { for: 'schedule-tenant' }, 'Tenant'),
    select,
    h('button', { type: 'submit' }, 'Show'),
  );
}

export async function schedulesPage(ctx: PageContext): Promise<void> {
  if (ctx.params[0] !== undefined) return schedulePage(ctx, ctx.params[0]);
  const missing = missingRoutes(ctx, ROUTES);
  if (missing.length > 0) {
    show(
      ctx.main,
      h('h1', {}, 'Schedules'),
      notice(`This server has no schedule routes (${missing.join(', ')}).`, 'error'),
    );
    return;
  }
  const tenant = ctx.query.get('tenant') ?? 'default';
  const status = h('div', { class: 'status-line' });
  const created = h('div', { 'aria-live': 'polite' });
  const list = h('div');
  show(
    ctx.main,
    h('h1', {}, 'Schedules'),
    createForm(ctx, tenant, created),
    created,
    h('h2', {}, 'Registered schedules'),
    tenantPicker(ctx, tenant),
    status,
    list,
  );
  const refresh = async (): Promise<void> => {
    const tenantId = ctx.session.admin ? tenant : undefined;
    const page = await get<Page<Schedule>>(`/v1/schedules${query({ tenantId, limit: 200 })}`, ctx.signal);
    renderList(list, page.items, status, refresh);
  };
  poll(ctx, POLL_MS, status, refresh);
  window.addEventListener(
    'tidemark:refresh',
    () => void refresh().catch((error: unknown) => show(status, notice(errorText(error), 'error'))),
    { signal: ctx.signal },
  );
  await Promise.resolve();
}

function field(id: string, label: string, input: HTMLElement, hint?: string): HTMLElement {
  return h(
    'div',
    { class: 'field' },
    h('label', { for: id }, label),
    input,
    hint === undefined ? null : h('small', { id: `${id}-hint` }, hint),
  );
}

function createForm(ctx: PageContext, tenant: string, out: HTMLElement): HTMLElement {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const name = h('input', {
    id: 'new-name',
    name: 'name',
    required: true,
    maxlength: 200,
    autocomplete: 'off',
  });
  const spec = h('input', {
    id: 'new-spec',
    name: 'spec',
    required: true,
    maxlength: 500,
    placeholder: 'every weekday at 9am',
    autocomplete: 'off',
    'aria-describedby': 'new-spec-hint',
  });
  const tz = h('input', {
    id: 'new-zone',
    name: 'timeZone',
    value: zone,
    required: true,
    'aria-describedby': 'new-zone-hint',
  });
  const queue = h('input', { id: 'new-queue', name: 'queue', value: 'default', required: true });
  const kind = h('input', {
    id: 'new-kind',
    name: 'kind',
    placeholder: 'handler name',
    'aria-describedby': 'new-kind-hint',
  });
  const url = h('input', { id: 'new-url', name: 'url', type: 'url', placeholder: 'https://…' });
  const submit = h('button', { type: 'submit' }, 'Create schedule');
  const form = h(
    'form',
    {
      class: 'card-form',
      'aria-labelledby': 'new-h',
      onsubmit: (event: Event) => {
        event.preventDefault();
        const target: Record<string, string> = { queue: queue.value.trim() };
        if (url.value.trim() !== '') target.url = url.value.trim();
        else target.kind = kind.value.trim();
        const body = {
          name: name.value.trim(),
          spec: spec.value.trim(),
          timeZone: tz.value.trim(),
          target,
          ...(ctx.session.admin ? { tenantId: tenant } : {}),
        };
        submit.disabled = true;
        post<Schedule>('/v1/schedules', body)
          .then((s) => {
            show(out, createdSummary(s));
            form.reset();
            tz.value = zone;
            queue.value = 'default';
            window.dispatchEvent(new Event('tidemark:refresh'));
          })
          .catch((error: unknown) => show(out, notice(`Not created: ${errorText(error)}`, 'error')))
          .finally(() => {
            submit.disabled = false;
          });
      },
    },
    h('h2', { id: 'new-h' }, 'New schedule'),
    h(
      'div',
      { class: 'grid-fields' },
      field('new-name', 'Name', name),
      field('new-spec', 'When', spec, 'cron, “every 90s”, “at 2030-01-01T09:00” or plain English'),
      field('new-zone', 'Time zone', tz, 'IANA zone the times are read in'),
      field('new-queue', 'Queue', queue),
      field('new-kind', 'Handler', kind, 'or a URL for an HTTP target'),
      field('new-url', 'URL target', url),
    ),
    submit,
  );
  return form;
}

/** Each time in the schedule's own zone first (what its spec means), then in UTC. */
function fireTimes(times: string[], timeZone: string): HTMLElement {
  return h(
    'ol',
    { class: 'fire-times' },
    times.map((t) =>
      h(
        'li',
        {},
        h('time', { datetime: t, class: 'zoned' }, inZone(t, timeZone)),
        h('span', { class: 'local' }, utc(t)),
      ),
    ),
  );
}

function createdSummary(s: Schedule): HTMLElement {
  return h(
    'section',
    { class: 'created', 'aria-label': 'Created schedule' },
    h(
      'p',
      {},
      'Created ',
      h('a', { href: `#/schedules/${s.id}` }, s.name),
      ': ',
      h('strong', {}, meaning(s)),
    ),
    h(
      'p',
      {},
      'Compiled to ',
      h('code', {}, s.compiled?.canonical ?? '—'),
      s.compiled === null ? '' : ` (${s.compiled.kind}, ${s.compiled.timeZone})`,
    ),
    h('h3', {}, `Next fire times (${s.timeZone}, then UTC)`),
    fireTimes(s.nextFireTimes, s.timeZone),
  );
}

function stateBadge(s: Schedule): HTMLElement {
  return s.paused ? badge('paused', 'warn') : badge('active', 'ok');
}

function actions(s: Schedule, status: HTMLElement, after: () => Promise<void>): HTMLElement {
  const act = (path: string, done: string) => {
    post(`/v1/schedules/${s.id}/${path}`)
      .then(async () => {
        show(status, notice(done, 'ok'));
        await after();
        focusIfLost(status);
      })
      .catch((error: unknown) => show(status, notice(errorText(error), 'error')));
  };
  return h(
    'span',
    { class: 'actions' },
    s.paused
      ? h(
          'button',
          {
            type: 'button',
            onclick: () => act('resume', `Resumed ${s.name}`),
            'aria-label': `Resume ${s.name}`,
          },
          'Resume',
        )
      : h(
          'button',
          {
            type: 'button',
            onclick: () => act('pause', `Paused ${s.name}`),
            'aria-label': `Pause ${s.name}`,
          },
          'Pause',
        ),
    h(
      'button',
      {
        type: 'button',
        onclick: () => act('trigger', `Triggered ${s.name}`),
        'aria-label': `Trigger ${s.name} now`,
      },
      'Trigger now',
    ),
  );
}

function renderList(
  region: HTMLElement,
  items: Schedule[],
  status: HTMLElement,
  refresh: () => Promise<void>,
): void {
  if (items.length === 0) {
    update(region, notice('No schedules yet.'));
    return;
  }
  update(
    region,
    table(
      'Schedules',
      ['Name', 'When', 'Zone', 'Next fire (its zone)', 'Next fire (UTC)', 'State', 'Actions'],
      items.map((s) => [
        h('a', { href: `#/schedules/${s.id}`, class: 'name' }, s.name),
        h('span', {}, h('code', {}, s.spec), h('br'), h('small', {}, meaning(s))),
        s.timeZone,
        s.paused ? '—' : inZone(s.nextFireAt, s.timeZone),
        s.paused ? '—' : utc(s.nextFireAt),
        stateBadge(s),
        actions(s, status, refresh),
      ]),
      { class: 'schedules' },
      items.map((s) => s.id),
    ),
  );
}

/**
 * How an occurrence went: the ledger's state, with enqueued split by lateness. A trigger-now
 * occurrence's fire time is the click itself, so it is neither on time nor late: it is manual; a
 * backfilled one was decided long after its fire time on purpose.
 */
export function occurrenceVerdict(o: Occurrence): { text: string; tone: string } {
  if (o.state === 'skipped') return { text: 'skipped', tone: 'warn' };
  if (o.state === 'missed') return { text: 'missed', tone: 'bad' };
  if (o.source === 'trigger') return { text: 'manual', tone: 'info' };
  // Decided on request for a past range: its lateness is the range's age, not a delay.
  if (o.source === 'backfill') return { text: 'backfilled', tone: 'info' };
  if (o.lateMs > LATE_AFTER_MS) return { text: 'late', tone: 'warn' };
  return { text: 'on time', tone: 'ok' };
}

async function schedulePage(ctx: PageContext, id: string): Promise<void> {
  const status = h('div', { class: 'status-line' });
  const head = h('div');
  const ledger = h('div');
  const canBackfill = ctx.session.routes.has('POST /v1/schedules/{id}/backfill');
  // Outside `head`, which each poll rebuilds: a backfill's result stays until the next one.
  const backfilled = h('div', { class: 'backfill-result', 'aria-live': 'polite' });
  show(
    ctx.main,
    h('p', {}, h('a', { href: '#/schedules' }, '← Schedules')),
    head,
    backfilled,
    status,
    h('h2', {}, 'Occurrences'),
    ledger,
  );
  // While a delete is under way the page reads nothing more: a read of the deleted schedule would
  // answer 404, which the browser reports as a failed load even though the page expects it.
  let deleting = false;
  let inFlight: Promise<void> = Promise.resolve();
  const quiet = async (): Promise<void> => {
    deleting = true;
    await inFlight;
  };
  const resume = (): void => {
    deleting = false;
  };
  const refresh = (): Promise<void> => {
    if (deleting) return Promise.resolve();
    const read = load();
    inFlight = read.catch(() => undefined);
    return read;
  };
  const load = async (): Promise<void> => {
    let s: Schedule;
    try {
      s = await get<Schedule>(`/v1/schedules/${encodeURIComponent(id)}`, ctx.signal);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) {
        update(
          head,
          h('h1', {}, 'Schedule not found'),
          notice(`No schedule ${id} is visible to this token.`, 'error'),
        );
        update(ledger);
        return;
      }
      throw error;
    }
    const occ = await get<Page<Occurrence>>(
      `/v1/schedules/${encodeURIComponent(id)}/occurrences?limit=100`,
      ctx.signal,
    );
    update(
      head,
      h('h1', {}, s.name, ' ', stateBadge(s)),
      h(
        'dl',
        { class: 'facts' },
        fact('Spec', h('code', {}, s.spec)),
        fact('Means', meaning(s)),
        fact('Compiled', h('code', {}, s.compiled?.canonical ?? '—')),
        fact('Zone', s.timeZone),
        fact('Target', s.target.url ?? `${s.target.queue} / ${s.target.kind}`),
        fact(
          'Misfire',
          `${s.misfire.policy}${s.misfire.startingDeadlineMs === null ? '' : `, deadline ${duration(s.misfire.startingDeadlineMs)}`}`,
        ),
        fact('Overlap', s.overlap),
        fact('Tenant', s.tenantId),
        fact('Version', String(s.version)),
      ),
      actions(s, status, refresh),
      editForm(s, status, refresh, { quiet, resume }),
      canBackfill ? backfillForm(s, backfilled, refresh) : null,
      h('h2', {}, `Next fire times (${s.timeZone}, then UTC)`),
      s.paused
        ? notice('Paused: nothing fires until it is resumed.')
        : fireTimes(s.nextFireTimes, s.timeZone),
    );
    if (occ.items.length === 0) {
      update(ledger, notice('No occurrences yet.'));
      return;
    }
    update(
      ledger,
      table(
        'Occurrence ledger, newest first',
        [`Fire time (${s.timeZone})`, 'UTC', 'Outcome', 'Lateness', 'Source', 'Job', 'Reason'],
        occ.items.map((o) => {
          const v = occurrenceVerdict(o);
          return [
            inZone(o.fireAt, s.timeZone),
            utc(o.fireAt),
            badge(v.text, v.tone),
            o.source === 'schedule' ? duration(o.lateMs) : '—',
            o.source,
            o.jobId === null ? '—' : h('a', { href: `#/jobs/${o.jobId}` }, `#${o.jobId}`),
            o.reason ?? '',
          ];
        }),
        { class: 'ledger' },
        occ.items.map((o) => `${o.source}:${o.fireAt}`),
      ),
    );
  };
  poll(ctx, POLL_MS, status, refresh);
  await Promise.resolve();
}

function fact(term: string, value: Node | string): HTMLElement[] {
  return [h('dt', {}, term), h('dd', {}, value)];
}

/** What the schedule means, or why it does not fire: its stored spec no longer compiles. */
function meaning(s: Schedule): string {
  return s.compiled?.description ?? `Not firing: ${s.specError ?? 'the spec does not compile'}`;
}

/**
 * Edit (name, spec, zone, target) and delete. Values are read from the submitted form itself: live
 * updates keep the elements the operator is typing in and hand them this render's handler.
 */
function editForm(
  s: Schedule,
  status: HTMLElement,
  refresh: () => Promise<void>,
  reads: { quiet: () => Promise<void>; resume: () => void },
): HTMLElement {
  const input = (name: string, label: string, value: string) =>
    field(
      `edit-${name}`,
      label,
      h('input', { id: `edit-${name}`, name, value, required: true, autocomplete: 'off' }),
    );
  return h(
    'details',
    { class: 'edit' },
    h('summary', {}, 'Edit or delete'),
    h(
      'form',
      {
        class: 'card-form',
        'aria-label': `Edit ${s.name}`,
        onsubmit: (event: Event) => {
          event.preventDefault();
          const text = formTexts(event.target as HTMLFormElement);
          const body = {
            name: text('name'),
            spec: text('spec'),
            timeZone: text('timeZone'),
            target: {
              queue: text('queue'),
              ...(s.target.url === undefined ? { kind: text('kind') } : { url: s.target.url }),
            },
          };
          patch<Schedule>(`/v1/schedules/${s.id}${query({ expectedVersion: s.version })}`, body)
            .then(async (saved) => {
              show(
                status,
                notice(`Saved ${saved.name} (version ${saved.version}): ${meaning(saved)}.`, 'ok'),
              );
              await refresh();
            })
            .catch((error: unknown) => show(status, notice(`Not saved: ${errorText(error)}`, 'error')));
        },
      },
      h(
        'div',
        { class: 'grid-fields' },
        input('name', 'Name', s.name),
        input('spec', 'When', s.spec),
        input('timeZone', 'Time zone', s.timeZone),
        input('queue', 'Queue', s.target.queue),
        s.target.url === undefined ? input('kind', 'Handler', s.target.kind) : null,
      ),
      h(
        'div',
        { class: 'actions' },
        h('button', { type: 'submit' }, 'Save changes'),
        h(
          'button',
          {
            type: 'button',
            class: 'danger',
            onclick: () => {
              void confirmAction(
                `Delete schedule ${s.name}?`,
                'It stops firing, and its occurrence ledger is deleted with it. Jobs it already enqueued stay.',
                'Delete schedule',
              ).then(async (yes) => {
                if (!yes) return;
                await reads.quiet();
                try {
                  await del(`/v1/schedules/${s.id}`);
                  location.hash = '#/schedules';
                } catch (error) {
                  reads.resume();
                  show(status, notice(errorText(error), 'error'));
                }
              });
            },
          },
          'Delete schedule',
        ),
      ),
    ),
  );
}

/** An instant as RFC 3339 in UTC to the minute: what the backfill form starts with. */
function minuteIso(ms: number): string {
  return `${new Date(Math.floor(ms / 60_000) * 60_000).toISOString().slice(0, 16)}:00Z`;
}

/**
 * Backfill a past range: a dry run first, whose counts the confirmation states ("this creates N
 * occurrences, M already exist"), then the backfill, and its result in `out`. The range is RFC 3339
 * text, so any offset can be typed; it starts as the last 24 hours. Values are read from the
 * submitted form, as in editForm, so live updates never lose what is being typed.
 */
function backfillForm(s: Schedule, out: HTMLElement, refresh: () => Promise<void>): HTMLElement {
  const now = Date.now();
  const input = (name: string, label: string, value: string) =>
    field(
      `backfill-${name}`,
      label,
      h('input', {
        id: `backfill-${name}`,
        name,
        value,
        required: true,
        autocomplete: 'off',
        spellcheck: 'false',
        'aria-describedby': 'backfill-hint',
      }),
    );
  const submit = h('button', { type: 'submit' }, 'Count and backfill…');
  return h(
    'details',
    { class: 'edit' },
    h('summary', {}, 'Backfill a past range'),
    h(
      'form',
      {
        class: 'card-form',
        'aria-label': `Backfill ${s.name}`,
        onsubmit: (event: Event) => {
          event.preventDefault();
          const text = formTexts(event.target as HTMLFormElement);
          const range = { from: text('from'), to: text('to') };
          submit.disabled = true;
          show(out, notice('Counting the fire times in the range…'));
          void runBackfill(s, range, out, refresh).finally(() => {
            submit.disabled = false;
          });
        },
      },
      h(
        'p',
        { id: 'backfill-hint' },
        `Each fire time of this schedule in [from, to) without an occurrence is enqueued now, as the scheduler would have (its spec, zone ${s.timeZone} and DST rules); those that have one stay as they are. RFC 3339 with an offset; to is not after now; at most 10,000 fire times.`,
      ),
      h(
        'div',
        { class: 'grid-fields' },
        input('from', 'From', minuteIso(now - 86_400_000)),
        input('to', 'To (excluded)', minuteIso(now)),
      ),
      h('div', { class: 'actions' }, submit),
    ),
  );
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

async function runBackfill(
  s: Schedule,
  range: { from: string; to: string },
  out: HTMLElement,
  refresh: () => Promise<void>,
): Promise<void> {
  const path = `/v1/schedules/${s.id}/backfill`;
  try {
    const dry = await post<Backfill>(path, { ...range, dryRun: true });
    if (dry.fireTimes === 0) {
      show(out, notice(`No fire time of ${s.name} falls in that range: nothing to backfill.`));
      return;
    }
    const e = dry.existingByState;
    const present =
      dry.existing === 0
        ? 'none already exist'
        : `${dry.existing} already exist (${e.enqueued} enqueued, ${e.skipped} skipped, ${e.missed} missed) and stay as they are`;
    const span = `${inZone(dry.firstFireAt, s.timeZone)} to ${inZone(dry.lastFireAt, s.timeZone)}`;
    if (dry.created === 0) {
      show(
        out,
        notice(
          `Nothing to backfill: all ${plural(dry.fireTimes, 'fire time')} (${span}) already have an occurrence.`,
          'ok',
        ),
      );
      return;
    }
    const yes = await confirmAction(
      `Backfill ${s.name}?`,
      `This creates ${plural(dry.created, 'occurrence')}, each enqueued as a job now; ${present}. ${plural(dry.fireTimes, 'fire time')} from ${span}.`,
      `Create ${plural(dry.created, 'occurrence')}`,
    );
    if (!yes) {
      show(out, notice('Backfill not started.'));
      return;
    }
    show(out, notice(`Backfilling ${plural(dry.created, 'occurrence')}…`));
    const done = await post<Backfill>(path, range);
    show(
      out,
      notice(
        `Backfilled ${s.name}: ${plural(done.created, 'occurrence')} created, ${done.existing} already there.`,
        'ok',
      ),
    );
    await refresh();
  } catch (error) {
    show(out, notice(`Not backfilled: ${errorText(error)}`, 'error'));
  }
}
