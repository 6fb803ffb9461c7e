/**
 * A schedule's page: edit it (the form survives the page's live updates while being typed in),
 * see the new fire times in its own zone, and delete it after a confirmation.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startTestApi } from '../api/support.ts';
import { openPage, screenshot, signIn } from './browser.ts';

const api = await startTestApi();

test('edit a schedule’s spec and zone, then delete it', async () => {
  const created = await api.call<{ id: string }>('POST', '/v1/schedules', {
    body: { name: 'digest', spec: '0 9 * * *', timeZone: 'UTC', target: { kind: 'mail' } },
  });
  assert.equal(created.status, 201);
  const id = created.body.id;
  const t = await openPage();
  try {
    const { page } = t;
    await signIn(page, api.url, api.tokens.admin, `#/schedules/${id}`);
    await page.getByRole('heading', { name: 'digest active' }).waitFor();
    await page.getByText('Edit or delete').click();
    const form = page.getByRole('form', { name: 'Edit digest' });
    await form.getByLabel('When').fill('30 7 * * *');
    // Typed values survive a live update of the page around them.
    const polled = page.waitForResponse((r) => r.url().endsWith(`/v1/schedules/${id}`));
    await polled;
    await page.waitForResponse((r) => r.url().endsWith(`/v1/schedules/${id}`));
    assert.equal(await form.getByLabel('When').inputValue(), '30 7 * * *');
    await form.getByLabel('Time zone').fill('Asia/Kolkata');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText(/^Saved digest \(version 2\)/).waitFor();
    const { rows } = await api.db.pool.query<{ spec: string; time_zone: string }>(
      'SELECT spec, time_zone FROM schedules WHERE id = $1',
      [id],
    );
    assert.deepEqual(rows[0], { spec: '30 7 * * *', time_zone: 'Asia/Kolkata' });
    // The next fire times in the schedule's zone, named as it was given.
    await page
      .locator('.fire-times time')
      .first()
      .filter({ hasText: / 07:30:00 GMT\+5:30$/ })
      .waitFor();
    await page.getByText('(Asia/Kolkata)').first().waitFor();
    await screenshot(page, 'schedule-edit');

    await form.getByRole('button', { name: 'Delete schedule' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete schedule digest?' });
    await dialog.getByRole('button', { name: 'Delete schedule' }).click();
    await page.getByRole('heading', { name: 'Schedules', level: 1 }).waitFor();
    const left = await api.db.pool.query('SELECT 1 FROM schedules WHERE id = $1', [id]);
    assert.equal(left.rows.length, 0);
  } finally {
    await t.close();
  }
  assert.deepEqual(t.problems, []);
});

test('backfill a past range: the confirmation counts what it creates and what exists, then the result', async () => {
  const created = await api.call<{ id: string }>('POST', '/v1/schedules', {
    body: { name: 'hourly-sync', spec: '0 * * * *', timeZone: 'Europe/Berlin', target: { kind: 'sync' } },
  });
  assert.equal(created.status, 201);
  const id = created.body.id;
  // Three of the six fire times are already there.
  const early = await api.call('POST', `/v1/schedules/${id}/backfill`, {
    body: { from: '2026-01-10T00:00:00Z', to: '2026-01-10T03:00:00Z' },
  });
  assert.equal(early.status, 200, early.text);
  const count = async (): Promise<number> =>
    (
      await api.db.pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM occurrences WHERE schedule_id = $1',
        [id],
      )
    ).rows[0]?.n ?? -1;
  const t = await openPage();
  try {
    const { page } = t;
    await signIn(page, api.url, api.tokens.admin, `#/schedules/${id}`);
    await page.getByRole('heading', { name: 'hourly-sync active' }).waitFor();
    await page.getByText('Backfill a past range').click();
    const form = page.getByRole('form', { name: 'Backfill hourly-sync' });

    // A range that ends in the future is refused, naming the field; nothing is written.
    await form.getByLabel('From').fill('2026-01-10T00:00:00Z');
    await form.getByLabel('To (excluded)').fill('2099-01-01T00:00:00Z');
    await form.getByRole('button', { name: 'Count and backfill…' }).click();
    await page.getByText(/^Not backfilled: .*body\.to: is after now/).waitFor();

    await form.getByLabel('To (excluded)').fill('2026-01-10T06:00:00Z');
    // The typed range survives a live update of the page around it.
    await page.waitForResponse((r) => r.url().endsWith(`/v1/schedules/${id}`));
    assert.equal(await form.getByLabel('To (excluded)').inputValue(), '2026-01-10T06:00:00Z');
    await form.getByRole('button', { name: 'Count and backfill…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Backfill hourly-sync?' });
    await dialog
      .getByText(
        /^This creates 3 occurrences, each enqueued as a job now; 3 already exist \(3 enqueued, 0 skipped, 0 missed\) and stay as they are\. 6 fire times from 2026-01-10 01:00:00 GMT\+1 to 2026-01-10 06:00:00 GMT\+1\.$/,
      )
      .waitFor();
    await screenshot(page, 'schedule-backfill-confirm');
    // Keep has the focus: Escape, or Enter, changes nothing.
    await page.keyboard.press('Enter');
    await page.getByText('Backfill not started.').waitFor();
    assert.equal(await count(), 3);

    // Keyboard only: the form's button, then the dialog's action button.
    await form.getByRole('button', { name: 'Count and backfill…' }).focus();
    await page.keyboard.press('Enter');
    await dialog.waitFor();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Create 3 occurrences');
    await page.keyboard.press('Enter');
    await page.getByText('Backfilled hourly-sync: 3 occurrences created, 3 already there.').waitFor();
    assert.equal(await count(), 6);
    // The ledger shows them as backfilled, with no lateness.
    await page.locator('table.ledger tbody tr').nth(5).waitFor();
    assert.equal(await page.locator('table.ledger .badge', { hasText: 'backfilled' }).count(), 6);
    await screenshot(page, 'schedule-backfill-done');

    // Again: nothing left to create, and no confirmation to ask.
    await form.getByRole('button', { name: 'Count and backfill…' }).click();
    await page
      .getByText(/^Nothing to backfill: all 6 fire times \(.*\) already have an occurrence\.$/)
      .waitFor();
    assert.equal(await count(), 6);
  } finally {
    await t.close();
  }
  // The refused range's 400, which the browser logs as a failed load, is the only one.
  assert.deepEqual(
    t.problems.map((p) => `${p.text} ${p.url.replace(api.url, '')}`),
    [
      `Failed to load resource: the server responded with a status of 400 (Bad Request) /v1/schedules/${id}/backfill`,
    ],
  );
});
