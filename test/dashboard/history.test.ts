/**
 * The overview's charts come from the database (GET /v1/history), so a fresh tab draws the last
 * hours at once; their y-axis fits the data, and the alert line is drawn only when it is in range.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startTestApi } from '../api/support.ts';
import { openPage, screenshot, signIn } from './browser.ts';

const api = await startTestApi();

async function ok<T>(method: string, path: string, body?: unknown): Promise<T> {
  const reply = await api.call<T>(method, path, { body, token: api.tokens.admin });
  assert.ok(reply.status >= 200 && reply.status < 300, `${method} ${path}: ${reply.status} ${reply.text}`);
  return reply.body;
}

test('a new tab draws lag, throughput and backlog history on load, scaled to the data', async () => {
  const schedule = await ok<{ id: string }>('POST', '/v1/schedules', {
    name: 'every minute',
    spec: '0 3 * * *',
    target: { kind: 'noop' },
  });
  // Two hours of five occurrences a minute: 40 ms late as a rule, one of them 200-400 ms late in
  // every seventh minute.
  await api.db.pool.query(
    `INSERT INTO occurrences (schedule_id, fire_at, state, materialised_at)
     SELECT $1, f, 'enqueued',
            f + CASE WHEN i % 7 = 0 AND k = 0 THEN 200 + (i % 3) * 100 ELSE 40 END * interval '1 millisecond'
       FROM generate_series(1, 120) i, generate_series(0, 4) k,
            LATERAL (SELECT date_trunc('minute', now()) - i * interval '1 minute' + k * interval '10 seconds' AS f) t`,
    [schedule.id],
  );
  for (let i = 0; i < 4; i++) await ok('POST', '/v1/jobs', { queue: 'charts', kind: 'k' });
  const { jobs } = await ok<{ jobs: { id: number; attempt: number }[] }>('POST', '/v1/workers/claim', {
    worker: 'w',
    queues: ['charts'],
    limit: 2,
  });
  for (const j of jobs) await ok('POST', `/v1/jobs/${j.id}/complete`, { worker: 'w', attempt: j.attempt });

  const t = await openPage();
  try {
    const { page } = t;
    await signIn(page, api.url, api.tokens.admin, '#/overview');
    const lag = page.getByRole('img', { name: /^Schedule lag p50 and p99 per minute/ });
    await lag.waitFor();
    // Scaled to the data (worst 400 ms), not to the 15 s alert line, which is named but not drawn.
    const top = Number(await lag.getAttribute('data-top'));
    assert.ok(top >= 0.4 && top <= 0.6, `axis top ${top}`);
    assert.equal(await lag.locator('line.threshold').count(), 0);
    await page.getByText('alert at 15 s (above this range)').waitFor();
    // p50 (40 ms everywhere) and p99 are separate lines.
    const [p99, p50] = await lag
      .locator('path.series')
      .evaluateAll((paths) => paths.map((p) => p.getAttribute('d') ?? ''));
    assert.ok(p50 !== undefined && p99 !== undefined && p50 !== p99);
    await page.getByRole('heading', { name: 'Throughput: 2 succeeded, 0 failed attempts' }).waitFor();
    await page.getByRole('heading', { name: 'Backlog: 2 due and waiting' }).waitFor();
    await screenshot(page, 'overview-history');

    // An alert threshold inside the data's range is drawn.
    await page.getByLabel('Alert when lag exceeds (seconds)').fill('0.3');
    await page.getByRole('button', { name: 'Save' }).click();
    // A horizontal line has no height, which Playwright calls hidden: wait for it in the DOM.
    await lag.locator('line.threshold').waitFor({ state: 'attached' });
    await page.getByText('alert at 0.3 s', { exact: true }).waitFor();

    // A reload draws the same history at once: nothing was kept in the tab.
    await page.reload();
    await lag.waitFor();
    assert.equal(await page.getByText('Collecting samples').count(), 0);
  } finally {
    await t.close();
  }
  assert.deepEqual(t.problems, []);
});
