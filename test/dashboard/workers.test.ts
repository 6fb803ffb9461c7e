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
