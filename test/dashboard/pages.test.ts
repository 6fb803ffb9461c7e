/**
 * The dashboard end to end: a real API server on this file's own database, headless Chromium, and a
 * remote worker played by the test through the worker pull API (claim, heartbeat with progress,
 * fail), so every state a page shows was reached through the same routes a real worker uses. Each
 * test asserts what the page shows and, for each action, what the database holds afterwards.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startTestApi } from '../api/support.ts';
import { openPage, screenshot, signIn, type ConsoleProblem, type TestPage } from './browser.ts';

const api = await startTestApi();

interface Claimed {
  id: number;
  attempt: number;
}

async function ok<T>(method: string, path: string, body?: unknown, token = api.tokens.admin): Promise<T> {
  const reply = await api.call<T>(method, path, { body, token });
  assert.ok(reply.status >= 200 && reply.status < 300, `${method} ${path}: ${reply.status} ${reply.text}`);
  return reply.body;
}

async function enqueue(body: Record<string, unknown>, token = api.tokens.admin): Promise<number> {
  return (await ok<{ id: number }>('POST', '/v1/jobs', body, token)).id;
}

async function claim(queue: string, worker = 'e2e-worker'): Promise<Claimed[]> {
  return (await ok<{ jobs: Claimed[] }>('POST', '/v1/workers/claim', { worker, queues: [queue], limit: 10 }))
    .jobs;
}

async function killJob(queue: string, error: string): Promise<number> {
  const id = await enqueue({ queue, kind: 'export', maxAttempts: 1 });
  const [job] = await claim(queue);
  assert.equal(job?.id, id);
  await ok('POST', `/v1/jobs/${id}/fail`, { worker: 'e2e-worker', attempt: job.attempt, error });
  return id;
}

async function jobState(id: number): Promise<string> {
  const { rows } = await api.db.pool.query<{ state: string }>('SELECT state FROM jobs WHERE id = $1', [id]);
  return rows[0]?.state ?? 'missing';
}

/** Problems other than the ones a test provoked on purpose. */
function unexpected(problems: ConsoleProblem[], allowed: (p: ConsoleProblem) => boolean = () => false) {
  return problems.filter((p) => !allowed(p));
}

async function withPage(fn: (t: TestPage) => Promise<void>): Promise<ConsoleProblem[]> {
  const t = await openPage();
  try {
    await fn(t);
    return t.problems;
  } finally {
    await t.close();
  }
}

test('sign-in refuses a wrong token, and the overview shows queues, counts and a lag alert', async () => {
  await enqueue({ queue: 'emails', kind: 'send' });
  await enqueue({ queue: 'emails', kind: 'send' });
  await killJob('reports', 'disk full');
  // An every-second schedule with no scheduler running falls behind by a second each second.
  await ok('POST', '/v1/schedules', { name: 'heartbeat', spec: 'every 1s', target: { kind: 'ping' } });

  const problems = await withPage(async ({ page }) => {
    await page.goto(`${api.url}/`);
    await page.getByLabel('API token').fill('tdm_not-a-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Not signed in: token unknown or revoked').waitFor();

    await page.getByLabel('API token').fill(api.tokens.admin);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    assert.equal(await page.getByText('Admin token').count(), 1);

    const queues = page.getByRole('table', { name: 'Jobs per queue' });
    await queues.waitFor();
    const emails = queues.getByRole('row').filter({ hasText: 'emails' });
    assert.match(await emails.innerText(), /emails\s+2\s+0\s+0\s+0/);
    assert.match(
      await queues.getByRole('row').filter({ hasText: 'reports' }).innerText(),
      /reports\s+0\s+0\s+0\s+1/,
    );
    assert.equal(await page.locator('.card', { hasText: 'Dead' }).locator('.card-value').innerText(), '1');
    await page.getByText('No lease has been taken yet').waitFor();

    await page.getByLabel('Alert when lag exceeds (seconds)').fill('1');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('alert').filter({ hasText: 'Schedule lag alert' }).waitFor({ timeout: 15_000 });
    await page.getByRole('img', { name: /^Jobs succeeded and attempts failed per minute/ }).waitFor();
    await screenshot(page, 'overview');
  });
  // The refused sign-in is a 401 Chrome logs as a failed resource; nothing else may appear.
  assert.deepEqual(
    unexpected(problems, (p) => p.url.endsWith('/v1/whoami') && p.text.includes('401')),
    [],
  );
});

test('schedules: create from a phrase, see next fire times, pause, trigger, see the occurrence', async () => {
  const problems = await withPage(async ({ page }) => {
    await signIn(page, api.url, api.tokens.admin, '#/schedules');
    await page.getByRole('heading', { name: 'Schedules', level: 1 }).waitFor();
    await page.getByLabel('Name').fill('standup');
    await page.getByLabel('When').fill('every weekday at 9am');
    await page.getByLabel('Time zone').fill('America/New_York');
    await page.getByLabel('Handler').fill('remind');
    await page.getByRole('button', { name: 'Create schedule' }).click();

    const created = page.getByRole('region', { name: 'Created schedule' });
    await created.waitFor();
    // Each fire time in the schedule's own zone (09:00 New York time), then in UTC.
    const zoned = await created.locator('.fire-times time').allInnerTexts();
    const utcTimes = await created.locator('.fire-times .local').allInnerTexts();
    assert.equal(zoned.length, 5);
    for (const t of zoned) assert.match(t, /^\d{4}-\d\d-\d\d 09:00:00 E[SD]T$/);
    for (const t of utcTimes) {
      // 09:00 in New York is 13:00 or 14:00 UTC, Monday to Friday.
      assert.match(t, /^\d{4}-\d\d-\d\d 1[34]:00:00 UTC$/);
      const day = new Date(`${t.slice(0, 10)}T00:00:00Z`).getUTCDay();
      assert.ok(day >= 1 && day <= 5, `${t} is a weekday`);
    }
    assert.match(await created.innerText(), /America\/New_York/);

    const row = page.getByRole('row').filter({ hasText: 'standup' });
    await row.getByText('active').waitFor();
    await row.getByRole('button', { name: 'Pause standup' }).click();
    await row.getByText('paused').waitFor();
    const paused = await api.db.pool.query<{ paused: boolean }>(
      `SELECT paused FROM schedules WHERE name = 'standup'`,
    );
    assert.equal(paused.rows[0]?.paused, true);
    await screenshot(page, 'schedules');

    await row.getByRole('button', { name: 'Trigger standup now' }).click();
    await page.getByText('Triggered standup').waitFor();
    await row.getByRole('link', { name: 'standup' }).click();
    const ledger = page.getByRole('table', { name: 'Occurrence ledger, newest first' });
    await ledger.waitFor();
    const first = ledger.getByRole('row').nth(1);
    // A trigger's fire time is the click: it is manual, with no lateness, never "on time, 5 ms".
    assert.match(await first.innerText(), /manual\s+—\s+trigger[\s\S]*#\d+/);
    const occ = await api.db.pool.query<{ n: number; job_id: string }>(
      `SELECT count(*)::int AS n, max(o.job_id)::text AS job_id FROM occurrences o
         JOIN schedules s ON s.id = o.schedule_id WHERE s.name = 'standup'`,
    );
    assert.equal(occ.rows[0]?.n, 1);
    assert.match(await first.innerText(), new RegExp(`#${occ.rows[0]?.job_id}`));
    await screenshot(page, 'schedule-ledger');
  });
  assert.deepEqual(unexpected(problems), []);
});

test('jobs: a running job shows progress as it changes, a silent one is flagged stuck, cancel reaches the row', async () => {
  const moving = await enqueue({ queue: 'imports', kind: 'load' });
  const silent = await enqueue({ queue: 'imports', kind: 'load', heartbeatMs: 1000 });
  const claimed = await claim('imports');
  const attempt = claimed.find((c) => c.id === moving)?.attempt;
  await ok('POST', `/v1/jobs/${moving}/heartbeat`, {
    worker: 'e2e-worker',
    attempt,
    progress: { percent: 30, message: 'copying rows' },
  });

  const problems = await withPage(async ({ page }) => {
    await signIn(page, api.url, api.tokens.admin, '#/jobs?queue=imports&state=running');
    const row = page.getByRole('row').filter({ hasText: `#${moving}` });
    const bar = row.getByRole('progressbar', { name: `Job ${moving} progress` });
    await bar.waitFor();
    assert.equal(await bar.getAttribute('aria-valuenow'), '30');
    await row.getByText('copying rows').waitFor();

    await ok('POST', `/v1/jobs/${moving}/heartbeat`, {
      worker: 'e2e-worker',
      attempt,
      progress: { percent: 75, message: 'building indexes' },
    });
    await row.getByText('building indexes').waitFor({ timeout: 10_000 });
    assert.equal(await bar.getAttribute('aria-valuenow'), '75');

    // heartbeatMs 1000 and no heartbeat since the claim: stuck after two missed beats.
    const silentRow = page.getByRole('row').filter({ hasText: `#${silent}` });
    await silentRow.locator('.stuck-warning').waitFor({ timeout: 10_000 });
    assert.equal(await row.locator('.stuck-warning').count(), 0);
    await screenshot(page, 'jobs');

    // Cancel asks first; keeping the job changes nothing.
    await row.getByRole('button', { name: `Cancel job ${moving}` }).click();
    const dialog = page.getByRole('dialog', { name: `Cancel job ${moving}?` });
    await dialog.getByText('1 job (load in imports) is running').waitFor();
    await dialog.getByRole('button', { name: 'Keep' }).click();
    await dialog.waitFor({ state: 'detached' });
    assert.equal(await jobState(moving), 'running');
    await row.getByRole('button', { name: `Cancel job ${moving}` }).click();
    await dialog.getByRole('button', { name: 'Cancel job' }).click();
    await page.getByText(`Job ${moving} cancelled (was running).`).waitFor();
    await row.getByText('cancel requested').waitFor();
  });
  const { rows } = await api.db.pool.query<{ requested: boolean }>(
    'SELECT cancel_requested_at IS NOT NULL AS requested FROM jobs WHERE id = $1',
    [moving],
  );
  assert.equal(rows[0]?.requested, true);
  assert.deepEqual(unexpected(problems), []);
});

test('job detail lists attempts with their errors', async () => {
  const id = await killJob('detail', 'TypeError: cannot read properties of undefined');
  const problems = await withPage(async ({ page }) => {
    await signIn(page, api.url, api.tokens.admin, `#/jobs/${id}`);
    const attempts = page.getByRole('table', { name: 'Attempts' });
    await attempts.waitFor();
    assert.match(
      await attempts.innerText(),
      /e2e-worker[\s\S]*failed[\s\S]*TypeError: cannot read properties/,
    );
    await page.getByRole('heading', { name: `Job #${id} dead` }).waitFor();
  });
  assert.deepEqual(unexpected(problems), []);
});

test('dead letter: re-run a selection, then one row; only those leave the dead letter', async () => {
  const a = await killJob('billing', 'card declined');
  const trace = 'Error: gateway timeout\n    at charge (billing.ts:42:7)\n    at run (worker.ts:10:3)';
  const b = await killJob('billing', trace);
  const c = await killJob('billing', 'bad address');
  const problems = await withPage(async ({ page }) => {
    await signIn(page, api.url, api.tokens.admin, '#/dead-letter?queue=billing');
    // A stack trace shows its first line; the rest opens on demand.
    const traced = page.getByRole('row').filter({ hasText: `#${b}` });
    await traced.getByText('Error: gateway timeout', { exact: true }).waitFor();
    assert.equal(await traced.getByText('at charge (billing.ts:42:7)').isVisible(), false);
    await traced.getByText('Error: gateway timeout', { exact: true }).click();
    await traced.getByText('at charge (billing.ts:42:7)').waitFor();
    for (const [id, error] of [
      [a, 'card declined'],
      [c, 'bad address'],
    ] as const) {
      await page
        .getByRole('row')
        .filter({ hasText: `#${id}` })
        .getByText(error)
        .waitFor();
    }
    await screenshot(page, 'dead-letter');
    await page.getByLabel(`Select job ${a}`).check();
    await page.getByLabel(`Select job ${c}`).check();
    await page.getByRole('button', { name: 'Re-run selected (2)' }).click();
    await page
      .getByRole('dialog', { name: 'Re-run 2 dead jobs?' })
      .getByRole('button', { name: 'Re-run 2' })
      .click();
    await page.getByText(`Re-ran 2 jobs: #${a}, #${c}.`).waitFor();
    // The list reloads after the message: wait for the re-run rows to leave it.
    await page.getByRole('link', { name: `#${a}`, exact: true }).waitFor({ state: 'detached' });
    await page.getByRole('link', { name: `#${c}`, exact: true }).waitFor({ state: 'detached' });
    assert.equal(await page.getByRole('link', { name: `#${b}`, exact: true }).count(), 1);
    assert.deepEqual(
      [await jobState(a), await jobState(b), await jobState(c)],
      ['available', 'dead', 'available'],
    );

    await page.getByRole('button', { name: `Re-run job ${b}` }).click();
    await page.getByText(`Re-ran 1 job: #${b}.`).waitFor();
    await page.getByText('No dead jobs in queue billing.').waitFor();
  });
  assert.equal(await jobState(b), 'available');
  assert.deepEqual(unexpected(problems), []);
});

test('workflows: find a failed workflow in the list, open it, see its failed node and error, resume it', async () => {
  const submitted = await ok<{ id: string }>('POST', '/v1/workflows', {
    id: 'nightly-etl',
    name: 'nightly ETL',
    nodes: [
      { id: 'extract', queue: 'etl', kind: 'extract' },
      { id: 'load', queue: 'etl', kind: 'load', dependsOn: ['extract'] },
      { id: 'report', queue: 'etl', kind: 'report', dependsOn: ['extract', 'load'] },
    ],
  });
  const [job] = await claim('etl');
  assert.ok(job !== undefined);
  await ok('POST', `/v1/jobs/${job.id}/fail`, {
    worker: 'e2e-worker',
    attempt: job.attempt,
    error: 'source database refused the connection',
    retryable: false,
  });

  const problems = await withPage(async ({ page }) => {
    await signIn(page, api.url, api.tokens.admin, '#/workflows');
    // The list: newest first, this one failed with one failed node; a state filter finds it again.
    const list = page.getByRole('table', { name: 'Workflows, newest first' });
    await list.waitFor();
    assert.match(await list.innerText(), /nightly ETL\s+default\s+failed\s+3 \/ 3\s+1/);
    await page.getByLabel('State').selectOption('running');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No workflows match.').waitFor();
    await page.getByLabel('State').selectOption('failed');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByRole('link', { name: 'nightly ETL' }).click();
    await page.getByRole('heading', { name: 'nightly ETL failed' }).waitFor();
    await page.goBack();
    await page.getByLabel('Workflow id').fill(submitted.id);
    await page.getByRole('button', { name: 'Open' }).click();
    await page.getByRole('heading', { name: 'nightly ETL failed' }).waitFor();
    const failed = page.getByRole('table', { name: 'Failed nodes' });
    await failed.waitFor();
    assert.match(await failed.innerText(), /extract[\s\S]*source database refused the connection/);
    const counts = await page.getByRole('table', { name: 'Nodes per state' }).innerText();
    assert.match(counts, /failed\s+1/);
    // The graph: one box per node, one line per dependency, the failed node marked as failed.
    const graph = page.getByRole('img', { name: 'Workflow graph: 3 nodes in 3 columns' });
    await graph.waitFor();
    assert.equal(await graph.locator('g.node').count(), 3);
    assert.equal(await graph.locator('.edge').count(), 3);
    assert.deepEqual(await graph.locator('g.node-failed title').allTextContents(), ['extract: failed']);
    // Every other node drawn in the state class the database holds for it.
    const others = await api.db.pool.query<{ key: string; state: string }>(
      `SELECT key, state FROM workflow_nodes WHERE workflow_id = $1 AND key <> 'extract' ORDER BY key`,
      [submitted.id],
    );
    assert.equal(others.rows.length, 2);
    for (const n of others.rows) {
      assert.notEqual(n.state, 'failed');
      assert.ok(
        (await graph.locator(`g.node-${n.state} title`).allTextContents()).includes(`${n.key}: ${n.state}`),
      );
    }
    await screenshot(page, 'workflow');

    await page.getByRole('button', { name: 'Resume workflow' }).click();
    await page.getByText('Workflow resumed.').waitFor();
    await page.getByRole('heading', { name: 'nightly ETL running' }).waitFor();
  });
  const { rows } = await api.db.pool.query<{ state: string }>(`SELECT state FROM workflows WHERE id = $1`, [
    submitted.id,
  ]);
  assert.equal(rows[0]?.state, 'running');
  assert.deepEqual(unexpected(problems), []);
});

test('a tenant token sees only its tenant: no other tenant’s jobs, no cluster figures', async () => {
  const mine = await enqueue({ queue: 'tenant-q', kind: 'a' }, api.tokens.acme);
  const theirs = await enqueue({ queue: 'tenant-q', kind: 'b' }, api.tokens.globex);
  const problems = await withPage(async ({ page }) => {
    await signIn(page, api.url, api.tokens.acme, '#/jobs?queue=tenant-q');
    await page
      .getByRole('row')
      .filter({ hasText: `#${mine}` })
      .waitFor();
    assert.equal(
      await page
        .getByRole('row')
        .filter({ hasText: `#${theirs}` })
        .count(),
      0,
    );
    assert.equal(await page.getByLabel('Tenant').count(), 0);
    assert.equal(await page.getByText('Tenant acme').count(), 1);

    await page.goto(`${api.url}/#/jobs/${theirs}`);
    await page.getByRole('heading', { name: 'Job not found' }).waitFor();

    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByText('these are your tenant’s jobs and schedules only').waitFor();
    assert.equal(await page.getByRole('heading', { name: 'Leadership' }).count(), 0);
    assert.match(await page.getByRole('table', { name: 'Jobs per queue' }).innerText(), /tenant-q\s+1/);
  });
  // The other tenant's job answers 404, which Chrome logs as a failed resource; nothing else is logged.
  assert.deepEqual(
    unexpected(problems, (p) => p.url.endsWith(`/v1/jobs/${theirs}`) && p.text.includes('404')),
    [],
  );
});
