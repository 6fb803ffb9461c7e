/**
 * The workers page: registered worker processes with their queues' slots and the jobs they run, a
 * stopped one marked; and queue controls: pause a queue after a confirmation, see who paused it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { workerRegister, workerStop } from '../../src/store/workers.ts';
import { startTestApi } from '../api/support.ts';
import { openPage, screenshot, signIn } from './browser.ts';

const api = await startTestApi();

async function ok<T>(method: string, path: string, body?: unknown): Promise<T> {
  const reply = await api.call<T>(method, path, { body, token: api.tokens.admin });
  assert.ok(reply.status >= 200 && reply.status < 300, `${method} ${path}: ${reply.status} ${reply.text}`);
  return reply.body;
}

test('workers with slots and running jobs; pause a queue with a confirmation, audited', async () => {
  const slots = [{ name: 'mail', concurrency: 4, running: 1 }];
  await workerRegister(api.db.pool, {
    id: 'w-live',
    host: 'host-a',
    pid: 4242,
    version: '0.1.0',
    queues: slots,
    heartbeatMs: 5000,
  });
  await workerRegister(api.db.pool, {
    id: 'w-gone',
    host: 'host-b',
    pid: 77,
    version: '0.1.0',
    queues: slots,
    heartbeatMs: 5000,
  });
  await workerStop(api.db.pool, 'w-gone', slots);
  const { id } = await ok<{ id: number }>('POST', '/v1/jobs', { queue: 'mail', kind: 'send' });
  await ok('POST', '/v1/workers/claim', { worker: 'w-live', queues: ['mail'], limit: 1 });
  await ok('PATCH', '/v1/queues/mail', { maxRunning: 5 });

  const t = await openPage();
  try {
    const { page } = t;
    await signIn(page, api.url, api.tokens.admin, '#/workers');
    const workers = page.getByRole('table', { name: 'Worker processes' });
    const live = workers.getByRole('row').filter({ hasText: 'w-live' });
    await live.getByRole('link', { name: `#${id} send` }).waitFor();
    assert.match(await live.innerText(), /running\s+host-a\s+4242\s+0\.1\.0\s+mail 1 \/ 4/);
    assert.match(
      await workers.getByRole('row').filter({ hasText: 'w-gone' }).innerText(),
      /stopped[\s\S]*stopped .* ago/,
    );

    const queues = page.getByRole('table', { name: 'Queues' });
    await queues.getByRole('button', { name: 'Pause queue mail' }).click();
    const dialog = page.getByRole('dialog', { name: 'Pause queue mail?' });
    await dialog.getByRole('button', { name: 'Pause queue' }).click();
    await page.getByText('Queue mail paused.').waitFor();
    await queues.getByText(/^paused by token test admin/).waitFor();
    await queues.getByText(/^pause by token test admin/).waitFor();
    await screenshot(page, 'workers');
    const { rows } = await api.db.pool.query<{ paused: boolean }>(
      'SELECT paused_at IS NOT NULL AS paused FROM queues WHERE name = $1',
      ['mail'],
    );
    assert.equal(rows[0]?.paused, true);
  } finally {
    await t.close();
  }
  assert.deepEqual(t.problems, []);
});

test('edit a queue’s limit and retry policy: confirmed with what changes, audited with the token; a bad value is named at its field and changes nothing', async () => {
  await ok('PATCH', '/v1/queues/reports', { maxRunning: 2 });
  const me = await ok<{ tokenId: string }>('GET', '/v1/whoami');
  const row = async () =>
    (
      await api.db.pool.query<{
        max_running: number | null;
        max_attempts: number;
        timeout_ms: number | null;
      }>('SELECT max_running, max_attempts, timeout_ms FROM queues WHERE name = $1', ['reports'])
    ).rows[0];
  const audit = async () =>
    (
      await api.db.pool.query<{
        by: string;
        before: Record<string, unknown>;
        after: Record<string, unknown>;
      }>(`SELECT by, before, after FROM queue_changes WHERE queue = $1 AND change = 'update' ORDER BY id`, [
        'reports',
      ])
    ).rows;
  assert.equal((await audit()).length, 1);

  const t = await openPage();
  try {
    const { page } = t;
    await signIn(page, api.url, api.tokens.admin, '#/workers');
    const queues = page.getByRole('table', { name: 'Queues' });
    const edit = queues.getByRole('button', { name: 'Edit queue reports' });
    await edit.click();
    const editor = page.getByRole('dialog', { name: 'Edit queue reports' });
    assert.equal(await editor.getByLabel('Max running').inputValue(), '2');
    assert.equal(await editor.getByLabel('Timeout (ms)').inputValue(), '');
    await editor.getByLabel('Max attempts').fill('6');
    await editor.getByLabel('Timeout (ms)').fill('30000');
    await editor.getByRole('button', { name: 'Review change' }).click();
    const confirm = page.getByRole('dialog', { name: 'Change queue reports?' });
    await confirm.getByText('maxAttempts: 4 → 6').waitFor();
    await confirm.getByText('timeoutMs: none → 30000 ms (30.0 s)').waitFor();
    await screenshot(page, 'queue-edit-confirm');
    await confirm.getByRole('button', { name: 'Change 2 settings' }).click();
    await page
      .getByText('Queue reports changed: maxAttempts 4 → 6; timeoutMs none → 30000 ms (30.0 s).')
      .waitFor();
    await editor.waitFor({ state: 'detached' });
    // The focus is back on the button that opened the editor.
    assert.equal(await edit.evaluate((b) => b === document.activeElement), true);
    assert.deepEqual(await row(), { max_running: 2, max_attempts: 6, timeout_ms: 30_000 });
    const changes = await audit();
    assert.equal(changes.length, 2);
    assert.equal(changes[1]?.by, `token test admin (${me.tokenId})`);
    assert.deepEqual(
      [changes[1]?.before.maxAttempts, changes[1]?.after.maxAttempts, changes[1]?.after.timeoutMs],
      [4, 6, 30_000],
    );
    // The page's audit list shows who changed what, before and after.
    const auditRow = page
      .getByRole('table', { name: 'Queue changes' })
      .getByRole('row')
      .filter({ hasText: 'maxAttempts 4 → 6' });
    await auditRow.waitFor();
    assert.match(
      await auditRow.innerText(),
      new RegExp(
        `ago\\s+reports\\s+token test admin \\(${me.tokenId}\\)\\s+update\\s+maxAttempts 4 → 6; timeoutMs none`,
      ),
    );
    await screenshot(page, 'queue-edit-audit');

    // Bad values: each refusal shows under its own field; nothing is written.
    await edit.click();
    await editor.getByLabel('Max attempts').fill('0');
    await editor.getByLabel('Max running').fill('lots');
    await editor.getByRole('button', { name: 'Review change' }).click();
    await confirm.getByRole('button', { name: 'Change 2 settings' }).click();
    const attemptsError = editor.locator('#queue-maxAttempts-error');
    await attemptsError.waitFor();
    assert.equal(await attemptsError.innerText(), 'Expected integer to be greater or equal to 1');
    assert.equal(
      await editor.locator('#queue-maxRunning-error').innerText(),
      'must be an integer from 1 to 2147483647 or null, got "lots"',
    );
    const maxAttempts = editor.getByLabel('Max attempts');
    assert.equal(await maxAttempts.getAttribute('aria-invalid'), 'true');
    assert.match((await maxAttempts.getAttribute('aria-describedby')) ?? '', /queue-maxAttempts-error/);
    // The focus is on the first bad field, whose description reads out the reason.
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'queue-maxRunning');
    await screenshot(page, 'queue-edit-error');
    assert.deepEqual(await row(), { max_running: 2, max_attempts: 6, timeout_ms: 30_000 });
    assert.equal((await audit()).length, 2);
    await editor.getByRole('button', { name: 'Cancel' }).click();
    await editor.waitFor({ state: 'detached' });
  } finally {
    await t.close();
  }
  // The refused PATCH is a 400 Chrome logs as a failed resource; nothing else may appear.
  assert.deepEqual(
    t.problems.filter((p) => !(p.url.endsWith('/v1/queues/reports') && p.text.includes('400'))),
    [],
  );
});
