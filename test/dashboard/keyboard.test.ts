/**
 * Every action of every page, with the keyboard alone (Tab, Shift+Tab, Enter, Space, Escape, arrows
 * in a select; no mouse): each control is reached with a visible focus, each confirmation keeps the
 * focus inside it and gives it back, and each action's effect is checked in the database.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { workerRegister } from '../../src/store/workers.ts';
import { startTestApi } from '../api/support.ts';
import { openPage, screenshot, type TestPage } from './browser.ts';
import {
  assertFocusKept,
  assertTrapsFocus,
  focusSettlesOn,
  focusedText,
  signInByKeyboard,
  tabTo,
} from './keyboard.ts';

const api = await startTestApi();

async function ok<T>(method: string, path: string, body?: unknown): Promise<T> {
  const reply = await api.call<T>(method, path, { body, token: api.tokens.admin });
  assert.ok(reply.status >= 200 && reply.status < 300, `${method} ${path}: ${reply.status} ${reply.text}`);
  return reply.body;
}

async function enqueue(queue: string, kind: string, payload: unknown = {}): Promise<number> {
  return (await ok<{ id: number }>('POST', '/v1/jobs', { queue, kind, payload, maxAttempts: 1 })).id;
}

/** Claims and fails the job at the head of `queue` for good: it lands in the dead letter. */
async function kill(queue: string, kind: string, payload: unknown = {}, error = 'declined'): Promise<number> {
  const id = await enqueue(queue, kind, payload);
  const { jobs } = await ok<{ jobs: { id: number; attempt: number }[] }>('POST', '/v1/workers/claim', {
    worker: 'w',
    queues: [queue],
    limit: 1,
  });
  assert.equal(jobs[0]?.id, id);
  await ok('POST', `/v1/jobs/${id}/fail`, { worker: 'w', attempt: jobs[0].attempt, error, retryable: false });
  return id;
}

async function states(ids: number[]): Promise<string[]> {
  const { rows } = await api.db.pool.query<{ state: string }>(
    'SELECT state FROM jobs WHERE id = ANY ($1::bigint[]) ORDER BY id',
    [ids],
  );
  return rows.map((r) => r.state);
}

async function withPage(hash: string, fn: (t: TestPage) => Promise<void>): Promise<void> {
  const t = await openPage();
  try {
    await signInByKeyboard(t.page, api.url, api.tokens.admin, hash);
    await fn(t);
  } finally {
    await t.close();
  }
  assert.deepEqual(t.problems, []);
}

test('jobs: filter, state tabs, select with Space, bulk retry and discard confirmed, paging, one job’s cancel and run again', async () => {
  const dead = [
    await kill('kb-jobs', 'charge'),
    await kill('kb-jobs', 'charge'),
    await kill('kb-jobs', 'charge'),
  ];
  const later = await enqueue('kb-jobs', 'mail', { customer: 7 });
  await ok('POST', '/v1/jobs', {
    jobs: Array.from({ length: 101 }, () => ({ queue: 'kb-paging', kind: 'k' })),
  });

  await withPage('#/jobs', async ({ page }) => {
    await page.getByRole('heading', { name: 'Jobs', level: 1 }).waitFor();
    // The filter: type a queue, Enter submits.
    await tabTo(page, page.getByLabel('Queue'));
    await page.keyboard.type('kb-jobs');
    await page.keyboard.press('Enter');
    const tabs = page.getByRole('navigation', { name: 'Job states' });
    await tabs.getByRole('link', { name: 'dead 3' }).waitFor();
    await tabTo(page, tabs.getByRole('link', { name: 'dead 3' }));
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Retry all 3 matching' }).waitFor();

    // Tick two rows with Space, then back up to the bulk action.
    const [a, b, c] = dead as [number, number, number];
    await tabTo(page, page.getByLabel(`Select job ${c}`));
    await page.keyboard.press('Space');
    await tabTo(page, page.getByLabel(`Select job ${b}`));
    await page.keyboard.press('Space');
    const retrySelected = page.getByRole('button', { name: 'Retry selected (2)' });
    await tabTo(page, retrySelected, { back: true });
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Retry 2 jobs?' });
    await dialog.waitFor();
    assert.equal(await focusedText(page), 'Keep');
    await assertTrapsFocus(page, dialog);
    // Escape keeps the jobs and gives the focus back to the button.
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    assert.equal(await focusedText(page), 'Retry selected (2)');
    assert.deepEqual(await states(dead), ['dead', 'dead', 'dead']);
    await page.keyboard.press('Enter');
    await dialog.waitFor();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByText('Retry: 2 jobs done.').waitFor();
    assert.deepEqual(await states(dead), ['dead', 'available', 'available']);
    // The focus is not lost to the top of the page: it is on what was done, or still in the toolbar.
    await assertFocusKept(page);

    const discardAll = page.getByRole('button', { name: 'Discard all 1 matching' });
    // The focus is on the outcome, just below the toolbar.
    await tabTo(page, discardAll, { back: true, max: 5 });
    await page.keyboard.press('Enter');
    const discard = page.getByRole('dialog', {
      name: 'Discard all 1 job in state dead matching this filter?',
    });
    await discard.waitFor();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByText('Discard: 1 job done.').waitFor();
    assert.deepEqual(await states([a]), []);
    await assertFocusKept(page);

    // Search by payload from the All tab, then open the one job it finds.
    await tabTo(page, tabs.getByRole('link', { name: /^All/ }), { back: true });
    await page.keyboard.press('Enter');
    await page.getByRole('link', { name: `#${later}`, exact: true }).waitFor();
    await tabTo(page, page.getByLabel('Payload contains'), { back: true });
    await page.keyboard.type('customer=7');
    await page.keyboard.press('Enter');
    await tabs.getByRole('link', { name: 'available 1' }).waitFor();
    const rows = page.getByRole('table', { name: 'Jobs, newest first' }).getByRole('row');
    assert.equal(await rows.count(), 2);
    await tabTo(page, page.getByRole('link', { name: `#${later}`, exact: true }));
    await page.keyboard.press('Enter');

    // One job: cancel through the confirmation, then run it again.
    await page.getByRole('heading', { name: `Job #${later} available` }).waitFor();
    await tabTo(page, page.getByRole('button', { name: `Cancel job ${later}` }));
    await page.keyboard.press('Enter');
    await page.getByRole('dialog', { name: `Cancel job ${later}?` }).waitFor();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: `Job #${later} cancelled` }).waitFor();
    assert.deepEqual(await states([later]), ['cancelled']);
    await assertFocusKept(page);
    await tabTo(page, page.getByRole('button', { name: 'Run again' }), { max: 10 });
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: `Job #${later} available` }).waitFor();
    assert.deepEqual(await states([later]), ['available']);
    await assertFocusKept(page);

    // Paging: the older page's link, at the end of the list.
    await tabTo(page, page.getByRole('link', { name: '← Jobs' }), { back: true });
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Jobs', level: 1 }).waitFor();
    await tabTo(page, page.getByLabel('Queue'));
    await page.keyboard.type('kb-paging');
    await page.keyboard.press('Enter');
    const older = page.getByRole('link', { name: 'Older 100 jobs →' }).first();
    await older.waitFor();
    await tabTo(page, older, { max: 25 });
    await page.keyboard.press('Enter');
    await page.getByRole('link', { name: '← Newest jobs' }).first().waitFor();
    assert.equal(await rows.count(), 2);
    // Select every job shown, with Space.
    await tabTo(page, page.getByLabel('Select every job shown'));
    await page.keyboard.press('Space');
    await page.getByText('1 selected').waitFor();
    await page.getByRole('button', { name: 'Cancel selected (1)' }).waitFor();
    await screenshot(page, 'keyboard-jobs');
  });
});

test('dead letter: open a stack trace, select with Space, re-run the selection confirmed, re-run one row', async () => {
  const trace = 'Error: gateway timeout\n    at charge (billing.ts:42:7)';
  const a = await kill('kb-dead', 'charge', {}, trace);
  const b = await kill('kb-dead', 'charge');
  const c = await kill('kb-dead', 'charge');

  await withPage('#/dead-letter?queue=kb-dead', async ({ page }) => {
    await page.getByRole('heading', { name: 'Dead letter', level: 1 }).waitFor();
    // The whole stack trace opens from its first line with Enter.
    const summary = page.locator('summary', { hasText: 'Error: gateway timeout' });
    await tabTo(page, summary);
    await page.keyboard.press('Enter');
    await page.getByText('at charge (billing.ts:42:7)').waitFor();

    await tabTo(page, page.getByLabel(`Select job ${a}`), { back: true });
    await page.keyboard.press('Space');
    await tabTo(page, page.getByLabel(`Select job ${c}`), { back: true });
    await page.keyboard.press('Space');
    const rerun = page.getByRole('button', { name: 'Re-run selected (2)' });
    await tabTo(page, rerun, { back: true });
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Re-run 2 dead jobs?' });
    await dialog.waitFor();
    await assertTrapsFocus(page, dialog);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    assert.equal(await focusedText(page), 'Re-run selected (2)');
    await page.keyboard.press('Enter');
    await dialog.waitFor();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByText(/^Re-ran 2 jobs/).waitFor();
    assert.deepEqual(await states([a, b, c]), ['available', 'dead', 'available']);
    // The list was redrawn: the focus is on the outcome, not lost.
    await focusSettlesOn(page, /^Re-ran 2 jobs/);

    // Select all with Space ticks the one row left.
    await tabTo(page, page.getByLabel('Select all dead jobs shown'));
    await page.keyboard.press('Space');
    assert.equal(await page.getByLabel(`Select job ${b}`).isChecked(), true);
    await page.getByRole('button', { name: 'Re-run selected (1)' }).waitFor();
    await page.keyboard.press('Space');
    await page.getByRole('button', { name: 'Re-run selected', exact: true }).waitFor();

    await tabTo(page, page.getByRole('button', { name: `Re-run job ${b}` }));
    await page.keyboard.press('Enter');
    await page.getByText(`Re-ran 1 job: #${b}.`).waitFor();
    assert.deepEqual(await states([a, b, c]), ['available', 'available', 'available']);
    await focusSettlesOn(page, /^Re-ran 1 job/);
    await page.getByText('No dead jobs in queue kb-dead.').waitFor();
  });
});

test('workers: from a worker’s running job to its page, and from a queue to its jobs', async () => {
  const id = await enqueue('kb-mail', 'send');
  await workerRegister(api.db.pool, {
    id: 'kb-worker',
    host: 'host-k',
    pid: 99,
    version: '0.1.0',
    queues: [{ name: 'kb-mail', concurrency: 2, running: 1 }],
    heartbeatMs: 5000,
  });
  await ok('POST', '/v1/workers/claim', { worker: 'kb-worker', queues: ['kb-mail'], limit: 1 });
  await ok('PATCH', '/v1/queues/kb-mail', { maxRunning: 3 });

  await withPage('#/workers', async ({ page }) => {
    await page.getByRole('heading', { name: 'Workers', level: 1 }).waitFor();
    await tabTo(page, page.getByRole('link', { name: `#${id} send` }));
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: `Job #${id} running` }).waitFor();
    await page.goBack();
    await page.getByRole('heading', { name: 'Workers', level: 1 }).waitFor();
    await tabTo(page, page.getByRole('table', { name: 'Queues' }).getByRole('link', { name: 'kb-mail' }));
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Jobs', level: 1 }).waitFor();
    assert.equal(await page.getByLabel('Queue').inputValue(), 'kb-mail');
  });
});

test('queues: pause and resume confirmed, edit the limits in a dialog that keeps and returns the focus, a bad value named at its field', async () => {
  await ok('PATCH', '/v1/queues/kb-q', { maxRunning: 2 });
  const queue = async () =>
    (
      await api.db.pool.query<{ paused: boolean; max_attempts: number; backoff_max_ms: number }>(
        'SELECT paused_at IS NOT NULL AS paused, max_attempts, backoff_max_ms FROM queues WHERE name = $1',
        ['kb-q'],
      )
    ).rows[0];

  const t = await openPage();
  try {
    const { page } = t;
    await signInByKeyboard(page, api.url, api.tokens.admin, '#/workers');
    const queues = page.getByRole('table', { name: 'Queues' });
    const pause = queues.getByRole('button', { name: 'Pause queue kb-q' });
    await tabTo(page, pause);
    await page.keyboard.press('Enter');
    const pauseDialog = page.getByRole('dialog', { name: 'Pause queue kb-q?' });
    await pauseDialog.waitFor();
    await assertTrapsFocus(page, pauseDialog);
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByText('Queue kb-q paused.').waitFor();
    assert.equal((await queue())?.paused, true);
    // The same button, now Resume, keeps the focus.
    await queues.getByRole('button', { name: 'Resume queue kb-q' }).waitFor();
    assert.equal(await focusedText(page), 'Resume queue kb-q');
    await page.keyboard.press('Enter');
    await page.getByRole('dialog', { name: 'Resume queue kb-q?' }).waitFor();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByText('Queue kb-q resumed.').waitFor();
    assert.equal((await queue())?.paused, false);

    // The editor: Escape closes it unchanged and gives the focus back to Edit.
    const edit = queues.getByRole('button', { name: 'Edit queue kb-q' });
    await tabTo(page, edit);
    await page.keyboard.press('Enter');
    const editor = page.getByRole('dialog', { name: 'Edit queue kb-q' });
    await editor.waitFor();
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'queue-maxRunning');
    await assertTrapsFocus(page, editor);
    await page.keyboard.press('Escape');
    await editor.waitFor({ state: 'detached' });
    assert.equal(await focusedText(page), 'Edit queue kb-q');

    // A change: Tab to the fields, type, Enter reviews, the confirmation applies it.
    await page.keyboard.press('Enter');
    await editor.waitFor();
    await tabTo(page, editor.getByLabel('Max attempts'));
    await page.keyboard.press('Control+A');
    await page.keyboard.type('9');
    await tabTo(page, editor.getByLabel('Backoff max (ms)'));
    await page.keyboard.press('Control+A');
    await page.keyboard.type('0');
    await page.keyboard.press('Enter');
    const confirm = page.getByRole('dialog', { name: 'Change queue kb-q?' });
    await confirm.getByText('backoffMaxMs: 3600000 ms (1 h 0 min) → 0 ms').waitFor();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    // backoffMaxMs below backoffBaseMs: refused under its field, which gets the focus.
    await editor.locator('#queue-backoffMaxMs-error').waitFor();
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'queue-backoffMaxMs');
    assert.equal(
      await editor.locator('#queue-backoffMaxMs-error').innerText(),
      'must be at least backoffBaseMs (1000)',
    );
    assert.deepEqual(await queue(), { paused: false, max_attempts: 4, backoff_max_ms: 3_600_000 });
    await page.keyboard.press('Control+A');
    await page.keyboard.type('60000');
    await page.keyboard.press('Enter');
    await confirm.waitFor();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByText(/^Queue kb-q changed: maxAttempts 4 → 9; backoffMaxMs/).waitFor();
    await editor.waitFor({ state: 'detached' });
    assert.equal(await focusedText(page), 'Edit queue kb-q');
    assert.deepEqual(await queue(), { paused: false, max_attempts: 9, backoff_max_ms: 60_000 });
    await screenshot(page, 'keyboard-queues');
  } finally {
    await t.close();
  }
  assert.deepEqual(
    t.problems.filter((p) => !(p.url.endsWith('/v1/queues/kb-q') && p.text.includes('400'))),
    [],
  );
});

test('schedules: create, pause, resume, trigger, pick a tenant, open one, edit and delete it confirmed', async () => {
  const schedule = async () =>
    (
      await api.db.pool.query<{ id: string; paused: boolean; spec: string }>(
        'SELECT id, paused, spec FROM schedules WHERE name = $1',
        ['kb-nightly'],
      )
    ).rows[0];

  await withPage('#/schedules', async ({ page }) => {
    await page.getByRole('heading', { name: 'Schedules', level: 1 }).waitFor();
    await tabTo(page, page.getByLabel('Name'));
    await page.keyboard.type('kb-nightly');
    await page.keyboard.press('Tab');
    await page.keyboard.type('every day at 3am');
    await tabTo(page, page.getByLabel('Handler'));
    await page.keyboard.type('report');
    await page.keyboard.press('Enter');
    await page.getByRole('region', { name: 'Created schedule' }).waitFor();
    const created = await schedule();
    assert.ok(created !== undefined);
    assert.equal(created.paused, false);

    const pause = page.getByRole('button', { name: 'Pause kb-nightly' });
    await tabTo(page, pause);
    await page.keyboard.press('Enter');
    await page.getByText('Paused kb-nightly').waitFor();
    assert.equal((await schedule())?.paused, true);
    // The toggle keeps the focus as Resume.
    await page.getByRole('button', { name: 'Resume kb-nightly' }).waitFor();
    assert.equal(await focusedText(page), 'Resume kb-nightly');
    await page.keyboard.press('Enter');
    await page.getByText('Resumed kb-nightly').waitFor();
    assert.equal((await schedule())?.paused, false);

    await tabTo(page, page.getByRole('button', { name: 'Trigger kb-nightly now' }));
    await page.keyboard.press('Enter');
    await page.getByText('Triggered kb-nightly').waitFor();
    const { rows: triggered } = await api.db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM occurrences WHERE schedule_id = $1 AND source = 'trigger' AND job_id IS NOT NULL`,
      [created.id],
    );
    assert.equal(triggered[0]?.n, 1);

    // The tenant picker applies with its button, so arrowing through it goes nowhere by itself.
    await tabTo(page, page.getByLabel('Tenant', { exact: true }), { back: true });
    await page.keyboard.press('ArrowDown');
    assert.doesNotMatch(page.url(), /tenant=/);
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.waitForURL(/#\/schedules\?tenant=acme$/);
    await page.getByText('No schedules yet.').waitFor();
    await tabTo(page, page.getByLabel('Tenant', { exact: true }));
    await page.keyboard.press('ArrowUp');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.waitForURL(/#\/schedules\?tenant=default$/);

    await tabTo(page, page.getByRole('link', { name: 'kb-nightly' }));
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'kb-nightly active' }).waitFor();

    // Edit: the disclosure opens with Enter, Enter in a field saves.
    await tabTo(page, page.getByText('Edit or delete'));
    await page.keyboard.press('Enter');
    const form = page.getByRole('form', { name: 'Edit kb-nightly' });
    await tabTo(page, form.getByLabel('When'));
    await page.keyboard.press('Control+A');
    await page.keyboard.type('0 4 * * *');
    await page.keyboard.press('Enter');
    await page.getByText(/^Saved kb-nightly \(version \d+\)/).waitFor();
    assert.equal((await schedule())?.spec, '0 4 * * *');

    await tabTo(page, form.getByRole('button', { name: 'Delete schedule' }));
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Delete schedule kb-nightly?' });
    await dialog.waitFor();
    await assertTrapsFocus(page, dialog);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    assert.equal(await focusedText(page), 'Delete schedule');
    assert.ok((await schedule()) !== undefined);
    await page.keyboard.press('Enter');
    await dialog.waitFor();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Schedules', level: 1 }).waitFor();
    assert.equal(await schedule(), undefined);
    await screenshot(page, 'keyboard-schedules');
  });
});

test('workflows: filter, open from the list and by id, cancel confirmed, resume, nodes by state, a graph node to its job', async () => {
  await ok('POST', '/v1/workflows', {
    id: 'kb-etl',
    name: 'kb ETL',
    nodes: [
      { id: 'extract', queue: 'kb-wf', kind: 'extract' },
      { id: 'load', queue: 'kb-wf', kind: 'load', dependsOn: ['extract'] },
    ],
  });
  const { jobs } = await ok<{ jobs: { id: number; attempt: number }[] }>('POST', '/v1/workers/claim', {
    worker: 'w',
    queues: ['kb-wf'],
    limit: 1,
  });
  const extract = jobs[0];
  assert.ok(extract !== undefined);
  await ok('POST', `/v1/jobs/${extract.id}/complete`, { worker: 'w', attempt: extract.attempt });
  await ok('POST', '/v1/workflows', { id: 'kb-other', nodes: [{ id: 'only', queue: 'kb-wf2', kind: 'k' }] });
  const workflowState = async (id: string) =>
    (await api.db.pool.query<{ state: string }>('SELECT state FROM workflows WHERE id = $1', [id])).rows[0]
      ?.state;

  await withPage('#/workflows', async ({ page }) => {
    await page.getByRole('heading', { name: 'Workflows', level: 1 }).waitFor();
    // The state filter: arrows choose, Enter applies.
    await tabTo(page, page.getByLabel('State'));
    await page.keyboard.press('ArrowDown');
    await tabTo(page, page.getByRole('button', { name: 'Filter' }));
    await page.keyboard.press('Enter');
    await page.waitForURL(/state=running/);
    await tabTo(page, page.getByRole('link', { name: 'kb ETL' }));
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'kb ETL running' }).waitFor();

    await tabTo(page, page.getByRole('button', { name: 'Cancel workflow' }));
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Cancel workflow kb ETL?' });
    await dialog.waitFor();
    await assertTrapsFocus(page, dialog);
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'kb ETL cancelled' }).waitFor();
    assert.equal(await workflowState('kb-etl'), 'cancelled');
    await assertFocusKept(page);
    await tabTo(page, page.getByRole('button', { name: 'Resume workflow' }), { max: 5 });
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'kb ETL running' }).waitFor();
    assert.equal(await workflowState('kb-etl'), 'running');
    await assertFocusKept(page);

    // Nodes of one state, from the counts and from the node-state select.
    await tabTo(
      page,
      page.getByRole('table', { name: 'Nodes per state' }).getByRole('link', { name: 'succeeded' }),
    );
    await page.keyboard.press('Enter');
    await page.waitForURL(/nstate=succeeded/);
    const nodes = page.getByRole('table', { name: 'Nodes with their times' });
    await nodes.getByRole('row').filter({ hasText: 'extract' }).waitFor();
    await tabTo(page, page.getByLabel('Node state', { exact: true }));
    await page.keyboard.press('Home');
    assert.doesNotMatch(page.url(), /nstate=$/);
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.waitForURL(/kb-etl\?nstate=$|kb-etl$/);
    await nodes.getByRole('row').filter({ hasText: 'load' }).waitFor();

    // A node of the graph opens its job.
    const node = page.getByRole('link', { name: `extract: succeeded, job ${extract.id}`, exact: true });
    await tabTo(page, node, { back: true });
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: `Job #${extract.id} succeeded` }).waitFor();

    // Open one by id from the list page.
    await tabTo(page, page.getByRole('link', { name: 'Workflows', exact: true }), { back: true });
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Workflows', level: 1 }).waitFor();
    await tabTo(page, page.getByLabel('Workflow id'));
    await page.keyboard.type('kb-other');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'kb-other running' }).waitFor();
    await screenshot(page, 'keyboard-workflows');
  });
});
