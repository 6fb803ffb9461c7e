/**
 * A workflow's page: every state in its own colour with a legend, nodes that link to their jobs (by
 * mouse and by keyboard), each node's times and the critical path; and a 100,000-node workflow that
 * opens as fast as a small one, because the page reads its counts and one page of nodes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
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

    const timeline = page.getByRole('img', { name: /^Critical path: 2 nodes/ });
    await timeline.waitFor();
    assert.match((await timeline.locator('title').textContent()) ?? '', /extract → load$/);
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
      .getByRole('link', { name: `extract: succeeded, job ${extract.id}` })
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
    await screenshot(page, 'workflow-huge');

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
