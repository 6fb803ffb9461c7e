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
