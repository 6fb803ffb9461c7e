/**
 * A workflow's page: every state in its own colour with a legend, nodes that link to their jobs (by
 * mouse and by keyboard), each node's times, the timeline with the critical path (of a workflow run
 * by a real Worker); and a 100,000-node workflow that opens as fast as a small one, because the page
 * reads its counts, one page of nodes and their timeline.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../../src/log.ts';
import { RetryAfterError } from '../../src/worker/errors.ts';
import { Worker } from '../../src/worker/worker.ts';
import { WorkflowClient } from '../../src/workflow/workflow-client.ts';
import { startTestApi } from '../api/support.ts';
import { openPage, screenshot, signIn } from './browser.ts';

const api = await startTestApi();

async function ok<T>(method: string, path: string, body?: unknown): Promise<T> {
  const reply = await api.call<T>(method, path, { body, token: api.tokens.admin });
  assert.ok(reply.status >= 200 && reply.status < 300, `${method} ${path}: ${reply.status} ${reply.text}`);
  return reply.body;
}

async function claimOne(queue: string): Promise<{ id: number; attempt: number }> {
  const { jobs } = await ok<{ jobs: { id: number; attempt: number }[] }>('POST', '/v1/workers/claim', {
    worker: 'w',
    queues: [queue],
    limit: 1,
  });
  assert.ok(jobs[0] !== undefined, `a job in ${queue}`);
  return jobs[0];
}

test('legend, a colour per state, nodes linked to their jobs, node times and the critical path', async () => {
  await ok('POST', '/v1/workflows', {
    id: 'etl-times',
    name: 'ETL with times',
    nodes: [
      { id: 'extract', queue: 'wf-a', kind: 'extract' },
      { id: 'side', queue: 'wf-b', kind: 'side' },
      { id: 'load', queue: 'wf-a', kind: 'load', dependsOn: ['extract'] },
      { id: 'report', queue: 'wf-a', kind: 'report', dependsOn: ['load', 'side'] },
    ],
  });
  const extract = await claimOne('wf-a');
  await ok('POST', `/v1/jobs/${extract.id}/complete`, { worker: 'w', attempt: extract.attempt });
  const load = await claimOne('wf-a');

  const t = await openPage();
  try {
    const { page } = t;
    await signIn(page, api.url, api.tokens.admin, '#/workflows/etl-times');
    await page.getByRole('heading', { name: 'ETL with times running' }).waitFor();
    const legend = page.getByRole('list', { name: 'Node states' });
    assert.deepEqual(await legend.getByRole('listitem').allInnerTexts(), [
      'pending',
      'waiting',
      'queued',
      'running',
      'succeeded',
      'failed',
      'skipped',
      'cancelled',
    ]);
    // Every state's swatch has its own fill.
    const fills = await legend
      .locator('.node-swatch')
      .evaluateAll((els) => els.map((e) => getComputedStyle(e).backgroundColor));
    assert.equal(new Set(fills).size, fills.length, fills.join(' '));

    const graph = page.getByRole('img', { name: /^Workflow graph: 4 nodes/ });
    await graph
      .locator('g.node-succeeded title')
      .filter({ hasText: 'extract: succeeded' })
      .waitFor({ state: 'attached' });
    await graph
      .locator('g.node-running title')
      .filter({ hasText: 'load: running' })
      .waitFor({ state: 'attached' });
    await graph
      .locator('g.node-queued title')
      .filter({ hasText: 'side: queued' })
      .waitFor({ state: 'attached' });
    await graph
      .locator('g.node-pending title')
      .filter({ hasText: 'report: pending' })
      .waitFor({ state: 'attached' });

    // The path so far ends at the node that finished last; the running one is on the timeline.
    await page.getByText('Critical path: extract (1 node').waitFor();
    const timeline = page.getByRole('group', { name: /^Timeline: 3 nodes/ });
    // By start: side was released at submit and has not started; extract started, then load.
    assert.deepEqual(
      await timeline.locator('g.tl-row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-key'))),
      ['side', 'extract', 'load'],
    );
    const nodes = page.getByRole('table', { name: 'Nodes with their times' });
    const extractRow = nodes.getByRole('row').filter({ hasText: 'extract' });
    assert.match(
      await extractRow.innerText(),
      /succeeded\s+#\d+\s+\d{4}-\d\d-\d\d [\d:]+ UTC\s+\d{4}-\d\d-\d\d [\d:]+ UTC\s+\d{4}-\d\d-\d\d [\d:]+ UTC\s+\d+ ms\s+1/,
    );
    await screenshot(page, 'workflow-detail');

    // The keyboard reaches a node and opens its job.
    const link = graph.getByRole('link', { name: `load: running, job ${load.id}` });
    await link.focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: `Job #${load.id} running` }).waitFor();
    await page.goBack();
    // And the mouse.
    await page
      .getByRole('img', { name: /^Workflow graph: 4 nodes/ })
      .getByRole('link', { name: `extract: succeeded, job ${extract.id}`, exact: true })
      .click();
    await page.getByRole('heading', { name: `Job #${extract.id} succeeded` }).waitFor();
  } finally {
    await t.close();
  }
  assert.deepEqual(t.problems, []);
});

test('a 100,000-node workflow opens with counts and one page of nodes, and pages on', async () => {
  const client = new WorkflowClient(api.db.pool);
  await client.submit({
    id: 'huge',
    name: 'huge fan-out',
    nodes: [
      { id: 'root', queue: 'huge', kind: 'k' },
      ...Array.from({ length: 99_999 }, (_, i) => ({
        id: `n${String(i).padStart(5, '0')}`,
        queue: 'huge',
        kind: 'k',
        dependsOn: ['root'],
      })),
    ],
  });
  const t = await openPage();
  try {
    const { page } = t;
    await signIn(page, api.url, api.tokens.admin, '#/workflows');
    const started = Date.now();
    await page.goto(`${api.url}/#/workflows/huge`);
    const nodes = page.getByRole('table', { name: 'Nodes with their times' });
    await nodes.waitFor();
    const openedMs = Date.now() - started;
    process.stdout.write(`100,000-node workflow page: nodes listed ${openedMs} ms after navigation\n`);
    assert.ok(openedMs < 5000, `opened in ${openedMs} ms`);
    assert.match(await page.getByRole('table', { name: 'Nodes per state' }).innerText(), /pending\s+99999/);
    assert.equal(await nodes.getByRole('row').count(), 101);
    // The graph is drawn for the listed page only.
    await page.getByText('100000 nodes: too many to draw whole').waitFor();
    assert.equal(await page.locator('svg.graph g.node').count(), 100);
    // The timeline: the listed page with the critical path (none yet: nothing has finished), and
    // none of this page's nodes released yet.
    await page.getByText('No node has finished yet').waitFor();
    await page.getByText("Drawn: the critical path's last 0 nodes and the nodes listed below.").waitFor();
    await page.getByText('None of these nodes has been released yet').waitFor();
    await screenshot(page, 'workflow-huge');
    const timed = Date.now();
    const tl = await ok<{ items: unknown[] }>('GET', '/v1/workflows/huge/timeline?limit=100&after=n50000');
    const timelineMs = Date.now() - timed;
    process.stdout.write(`100,000-node workflow: a timeline page of 100 in ${timelineMs} ms\n`);
    assert.equal(tl.items.length, 100);

    const first = await nodes.getByRole('row').nth(1).locator('td').first().innerText();
    await page.getByRole('link', { name: 'Next 100 nodes →' }).click();
    await page.getByRole('link', { name: '← First nodes' }).waitFor();
    const second = await nodes.getByRole('row').nth(1).locator('td').first().innerText();
    assert.ok(second > first, `${second} after ${first}`);
    // Nodes of one state, from the counts table.
    await page.getByRole('link', { name: 'queued', exact: true }).click();
    await nodes.getByRole('row').filter({ hasText: 'root' }).waitFor();
    assert.equal(await nodes.getByRole('row').count(), 2);
  } finally {
    await t.close();
  }
  assert.deepEqual(t.problems, []);
});

test('the timeline of a workflow run by a worker: nodes in order of start, the critical path highlighted, rows link to jobs', async () => {
  const worker = new Worker({
    pool: api.db.pool,
    connectionString: api.db.url,
    queues: [{ name: 'gantt', concurrency: 4 }],
    pollMs: 50,
    log: createLogger('gantt-worker'),
    handlers: {
      step: async (ctx) => {
        const p = ctx.payload as { ms: number; failFirst?: boolean };
        await new Promise((r) => setTimeout(r, p.ms));
        if (p.failFirst === true && ctx.attempt === 1) throw new RetryAfterError('first attempt fails', 50);
      },
    },
  });
  await worker.start();
  try {
    // fetch → (parse, enrich) → publish; enrich is the slow branch and needs two attempts.
    await ok('POST', '/v1/workflows', {
      id: 'gantt',
      name: 'nightly publish',
      nodes: [
        { id: 'fetch', queue: 'gantt', kind: 'step', payload: { ms: 200 } },
        { id: 'parse', queue: 'gantt', kind: 'step', payload: { ms: 60 }, dependsOn: ['fetch'] },
        {
          id: 'enrich',
          queue: 'gantt',
          kind: 'step',
          payload: { ms: 450, failFirst: true },
          dependsOn: ['fetch'],
        },
        { id: 'publish', queue: 'gantt', kind: 'step', payload: { ms: 120 }, dependsOn: ['parse', 'enrich'] },
      ],
    });
    const deadline = Date.now() + 20_000;
    for (;;) {
      const s = await ok<{ state: string }>('GET', '/v1/workflows/gantt');
      if (s.state === 'succeeded') break;
      assert.ok(s.state === 'running' && Date.now() < deadline, `workflow ${s.state}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await worker.stop();
  }
  const api_ = await ok<{ items: { key: string; jobId: number; startedAt: string }[] }>(
    'GET',
    '/v1/workflows/gantt/timeline',
  );
  const byStart = [...api_.items].sort((a, b) => Date.parse(a.startedAt) - Date.parse(b.startedAt));
  const jobOf = new Map(api_.items.map((n) => [n.key, n.jobId]));

  const t = await openPage();
  try {
    const { page } = t;
    await signIn(page, api.url, api.tokens.admin, '#/workflows/gantt');
    await page.getByRole('heading', { name: 'nightly publish succeeded' }).waitFor();
    await page.getByText(/^Critical path: fetch → enrich → publish \(3 nodes, [\d.]+ (s|ms)\)$/).waitFor();
    const timeline = page.getByRole('group', { name: /^Timeline: 4 nodes over / });
    const rows = timeline.locator('g.tl-row');
    const keys = await rows.evaluateAll((els) => els.map((e) => e.getAttribute('data-key')));
    assert.deepEqual(
      keys,
      byStart.map((n) => n.key),
      'rows in order of first start',
    );
    assert.equal(keys[0], 'fetch');
    assert.equal(keys.at(-1), 'publish');
    assert.deepEqual(
      await timeline
        .locator('g.tl-row.critical')
        .evaluateAll((els) => els.map((e) => e.getAttribute('data-key'))),
      ['fetch', 'enrich', 'publish'],
    );
    // Each critical bar starts where (or after) the one before it ended, and is outlined.
    const bars = await timeline.locator('g.tl-row.critical rect.run').evaluateAll((els) =>
      els.map((e) => {
        const r = e as SVGRectElement;
        return {
          x: r.x.baseVal.value,
          end: r.x.baseVal.value + r.width.baseVal.value,
          stroke: getComputedStyle(r).strokeWidth,
        };
      }),
    );
    assert.equal(bars.length, 3);
    for (let i = 1; i < bars.length; i++) {
      assert.ok(bars[i]!.x >= bars[i - 1]!.end - 0.5, `critical bar ${i} starts after bar ${i - 1} ends`);
    }
    assert.ok(
      bars.every((b) => b.stroke === '2.5px'),
      JSON.stringify(bars),
    );
    const parse = timeline.locator('g.tl-row[data-key="parse"]');
    assert.equal(await parse.evaluate((e) => e.classList.contains('critical')), false);
    assert.match(
      (await timeline.getByRole('link', { name: /^enrich: succeeded/ }).getAttribute('aria-label')) ?? '',
      /^enrich: succeeded, job \d+, started at \+[\d.]+ (ms|s), [\d.]+ (ms|s), 2 attempts, on the critical path$/,
    );
    assert.deepEqual(
      await page.getByRole('list', { name: 'Timeline' }).getByRole('listitem').allInnerTexts(),
      [
        'released, waiting for a worker',
        'first start to last finish, in its state’s colour (as in the graph)',
        'critical path',
      ],
    );
    await page.getByRole('heading', { name: 'Timeline' }).scrollIntoViewIfNeeded();
    await screenshot(page, 'workflow-timeline');

    // A row opens its job, by mouse and by keyboard.
    await timeline.getByRole('link', { name: /^enrich: succeeded/ }).click();
    await page.getByRole('heading', { name: `Job #${jobOf.get('enrich')} succeeded` }).waitFor();
    await page.goBack();
    await page
      .getByRole('group', { name: /^Timeline: 4 nodes/ })
      .getByRole('link', { name: /^publish: succeeded/ })
      .focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: `Job #${jobOf.get('publish')} succeeded` }).waitFor();
  } finally {
    await t.close();
  }
  assert.deepEqual(t.problems, []);
});
