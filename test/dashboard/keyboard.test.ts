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
import { assertTrapsFocus, focusedText, signInByKeyboard, tabTo } from './keyboard.ts';

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
    assert.notEqual(await page.evaluate(() => document.activeElement?.tagName), 'BODY');

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
    assert.notEqual(await page.evaluate(() => document.activeElement?.tagName), 'BODY');

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
    assert.notEqual(await page.evaluate(() => document.activeElement?.tagName), 'BODY');
    await tabTo(page, page.getByRole('button', { name: 'Run again' }), { max: 10 });
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: `Job #${later} available` }).waitFor();
    assert.deepEqual(await states([later]), ['available']);
    assert.notEqual(await page.evaluate(() => document.activeElement?.tagName), 'BODY');

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
    assert.match(await focusedText(page), /^Re-ran 2 jobs/);

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
    assert.match(await focusedText(page), /^Re-ran 1 job/);
    await page.getByText('No dead jobs in queue kb-dead.').waitFor();
  });
});
