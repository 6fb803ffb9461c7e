/**
 * The jobs list: state tabs with counts, the queue picker and kind filter, paging past the newest
 * 100, and bulk retry, discard and cancel of a selection or of everything matching, each confirmed
 * with the number of jobs it touches; what the database holds afterwards is checked.
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

async function countIn(queue: string, state: string): Promise<number> {
  const { rows } = await api.db.pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM jobs WHERE queue = $1 AND state = $2',
    [queue, state],
  );
  return rows[0]?.n ?? 0;
}

async function killJobs(queue: string, n: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) {
    ids.push((await ok<{ id: number }>('POST', '/v1/jobs', { queue, kind: 'charge', maxAttempts: 1 })).id);
  }
  const { jobs } = await ok<{ jobs: { id: number; attempt: number }[] }>('POST', '/v1/workers/claim', {
    worker: 'w',
    queues: [queue],
    limit: n,
  });
  for (const j of jobs) {
    await ok('POST', `/v1/jobs/${j.id}/fail`, {
      worker: 'w',
      attempt: j.attempt,
      error: 'declined',
      retryable: false,
    });
  }
  return ids;
}

test('tabs with counts, kind filter, paging past 100, bulk actions confirmed with their counts', async () => {
  await ok('POST', '/v1/jobs', {
    jobs: Array.from({ length: 105 }, (_, i) => ({
      queue: 'paging',
      kind: i % 5 === 0 ? 'special' : 'plain',
    })),
  });
  const [a, b, c] = await killJobs('billing', 3);
  assert.ok(a !== undefined && b !== undefined && c !== undefined);

  const t = await openPage();
  try {
    const { page } = t;
    await signIn(page, api.url, api.tokens.admin, '#/jobs?queue=paging');
    const tabs = page.getByRole('navigation', { name: 'Job states' });
    await tabs.getByRole('link', { name: 'available 105' }).waitFor();
    const rows = page.getByRole('table', { name: 'Jobs, newest first' }).getByRole('row');
    await page.getByRole('link', { name: 'Older 100 jobs →' }).first().waitFor();
    assert.equal(await rows.count(), 101);
    await screenshot(page, 'jobs-list');
    await page.getByRole('link', { name: 'Older 100 jobs →' }).first().click();
    await page.getByRole('link', { name: '← Newest jobs' }).first().waitFor();
    assert.equal(await rows.count(), 6);

    // The queue picker offers the server's queues; the kind filter narrows the list.
    const options = await page
      .locator('#queue-names option')
      .evaluateAll((o) => o.map((e) => e.getAttribute('value')));
    assert.ok(options.includes('paging') && options.includes('billing'), options.join(','));
    await page.getByLabel('Kind').fill('special');
    await page.getByRole('button', { name: 'Filter' }).click();
    await tabs.getByRole('link', { name: 'available 21' }).waitFor();

    // Everything matching: cancel the 21 special jobs, through several requests' worth of confirmation.
    await tabs.getByRole('link', { name: 'available 21' }).click();
    await page.getByRole('button', { name: 'Cancel all 21 matching' }).click();
    const dialog = page.getByRole('dialog', {
      name: 'Cancel all 21 jobs in state available matching this filter?',
    });
    await dialog.getByRole('button', { name: 'Cancel 21' }).click();
    await page.getByText('Cancel: 21 jobs done.').waitFor();
    assert.equal(await countIn('paging', 'cancelled'), 21);
    assert.equal(await countIn('paging', 'available'), 84);

    // A selection in the dead tab: retry two, then discard the last one as "all matching".
    await page.goto(`${api.url}/#/jobs?queue=billing&state=dead`);
    await tabs.getByRole('link', { name: 'dead 3' }).waitFor();
    await page.getByLabel(`Select job ${a}`).check();
    await page.getByLabel(`Select job ${c}`).check();
    await page.getByRole('button', { name: 'Retry selected (2)' }).click();
    await page
      .getByRole('dialog', { name: 'Retry 2 jobs?' })
      .getByRole('button', { name: 'Retry 2' })
      .click();
    await page.getByText('Retry: 2 jobs done.').waitFor();
    assert.equal(await countIn('billing', 'available'), 2);
    await tabs.getByRole('link', { name: 'dead 1' }).waitFor();
    await page.getByRole('button', { name: 'Discard all 1 matching' }).click();
    const discard = page.getByRole('dialog', {
      name: 'Discard all 1 job in state dead matching this filter?',
    });
    await discard.getByText('1 job and their attempts are deleted for good.').waitFor();
    await discard.getByRole('button', { name: 'Discard 1' }).click();
    await page.getByText('Discard: 1 job done.').waitFor();
    const { rows: left } = await api.db.pool.query('SELECT 1 FROM jobs WHERE id = $1', [b]);
    assert.equal(left.length, 0);
  } finally {
    await t.close();
  }
  assert.deepEqual(t.problems, []);
});

test('search by kind and payload; retry everything matching it, confirmed with the count; a filter the API refuses is named under its field', async () => {
  const dead = async (kind: string, payload: unknown): Promise<number> => {
    const { id } = await ok<{ id: number }>('POST', '/v1/jobs', {
      queue: 'billing-s',
      kind,
      payload,
      maxAttempts: 1,
    });
    const { jobs } = await ok<{ jobs: { id: number; attempt: number }[] }>('POST', '/v1/workers/claim', {
      worker: 'w',
      queues: ['billing-s'],
      limit: 1,
    });
    assert.equal(jobs[0]?.id, id);
    await ok('POST', `/v1/jobs/${id}/fail`, {
      worker: 'w',
      attempt: jobs[0].attempt,
      error: 'declined',
      retryable: false,
    });
    return id;
  };
  const hits = [
    await dead('charge', { customer: 42, region: 'eu' }),
    await dead('charge', { customer: 42, region: 'us' }),
    await dead('charge', { customer: 42 }),
  ];
  const others = [
    await dead('charge', { customer: 43 }),
    await dead('refund', { customer: 42 }),
    await dead('charge', { customer: '42' }),
  ];

  const t = await openPage();
  try {
    const { page } = t;
    await signIn(page, api.url, api.tokens.admin, '#/jobs?queue=billing-s&state=dead');
    const tabs = page.getByRole('navigation', { name: 'Job states' });
    await tabs.getByRole('link', { name: 'dead 6' }).waitFor();

    // A filter the API refuses: the reason shows under the payload field, which gets the focus.
    const payload = page.getByLabel('Payload contains');
    await payload.fill('{"customer": 42');
    await page.getByRole('button', { name: 'Filter' }).click();
    const error = page.locator('#f-payload-error');
    await error.waitFor();
    assert.match(await error.innerText(), /^is not valid JSON \(.*\): write key=value pairs/);
    assert.equal(await payload.getAttribute('aria-invalid'), 'true');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'f-payload');
    assert.equal(new URL(page.url()).hash, '#/jobs?queue=billing-s&state=dead');
    await screenshot(page, 'jobs-filter-error');

    await page.getByLabel('Kind').fill('charge');
    await payload.fill('customer=42');
    await page.getByRole('button', { name: 'Filter' }).click();
    await tabs.getByRole('link', { name: 'dead 3' }).waitFor();
    assert.equal(await payload.getAttribute('aria-invalid'), null);
    const rows = page.getByRole('table', { name: 'Jobs, newest first' }).getByRole('row');
    assert.equal(await rows.count(), 4);
    await screenshot(page, 'jobs-search');

    await page.getByRole('button', { name: 'Retry all 3 matching' }).click();
    const dialog = page.getByRole('dialog', { name: 'Retry all 3 jobs in state dead matching this filter?' });
    await dialog
      .getByText('Filter: state dead · queue billing-s · kind charge · payload contains customer=42.')
      .waitFor();
    await dialog.getByRole('button', { name: 'Retry 3' }).click();
    await page.getByText('Retry: 3 jobs done.').waitFor();
  } finally {
    await t.close();
  }
  const { rows } = await api.db.pool.query<{ id: number; state: string }>(
    'SELECT id::int, state FROM jobs WHERE id = ANY ($1::bigint[]) ORDER BY id',
    [[...hits, ...others]],
  );
  assert.deepEqual(
    rows.map((r) => [r.id, r.state]),
    [...hits.map((id) => [id, 'available']), ...others.map((id) => [id, 'dead'])],
  );
  // The verifying request the Filter button made was refused once: Chrome logs that 400.
  assert.deepEqual(
    t.problems.filter((p) => !(p.url.includes('/v1/jobs?') && p.text.includes('400'))),
    [],
  );
});

test('a payload search that reads its bound without filling the page says so and searches on from there', async () => {
  const { id: old } = await ok<{ id: number }>('POST', '/v1/jobs', {
    queue: 'archive',
    kind: 'export',
    payload: { customer: 99 },
  });
  await api.db.pool.query(
    `INSERT INTO jobs (queue, kind, state, idempotency_key, payload, finished_at)
     SELECT 'noise', 'k', 'succeeded', 'noise-' || g, '{"customer": 1}', now() FROM generate_series(1, 10050) g`,
  );
  const t = await openPage();
  try {
    const { page } = t;
    await signIn(page, api.url, api.tokens.admin, '#/jobs?payload=customer%3D99');
    await page
      .getByText(/^This page stopped after reading 10,000 jobs \(down to #\d+\), with 0 jobs matching/)
      .waitFor();
    await page.getByText('No jobs match.').waitFor();
    await screenshot(page, 'jobs-search-cut-short');
    await page.getByRole('link', { name: 'Search older jobs →' }).click();
    await page.getByRole('link', { name: `#${old}`, exact: true }).waitFor();
    assert.equal(await page.getByText(/^This page stopped/).count(), 0);
  } finally {
    await t.close();
  }
  assert.deepEqual(t.problems, []);
});
