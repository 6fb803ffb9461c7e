/**
 * Pages that poll update in place: the element an operator has focused and the text they have
 * selected are still there after the data beside them changed, on every page that updates live
 * (overview, schedules and one schedule, jobs and one job, workflows and one workflow, workers),
 * and a row added above a focused row does not turn its button into another's. And the jobs page
 * from the keyboard alone: sign in, move between sections, cancel with the confirmation (every
 * page's keyboard pass: keyboard.test.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { workerRegister } from '../../src/store/workers.ts';
import { startTestApi } from '../api/support.ts';
import { openPage, screenshot, signIn } from './browser.ts';

const api = await startTestApi();

async function ok<T>(method: string, path: string, body?: unknown): Promise<T> {
  const reply = await api.call<T>(method, path, { body, token: api.tokens.admin });
  assert.ok(reply.status >= 200 && reply.status < 300, `${method} ${path}: ${reply.status} ${reply.text}`);
  return reply.body;
}

const enqueue = async (queue: string, kind = 'k'): Promise<number> =>
  (await ok<{ id: number }>('POST', '/v1/jobs', { queue, kind })).id;

/** Resolves once the page has read `path` `times` more times: that many polls have been drawn. */
function polls(page: Page, path: RegExp, times: number): Promise<void> {
  let seen = 0;
  return new Promise((resolve) => {
    const onResponse = (response: { url(): string }) => {
      if (!path.test(new URL(response.url()).pathname)) return;
      if (++seen < times) return;
      page.off('response', onResponse);
      resolve();
    };
    page.on('response', onResponse);
  });
}

test('focus and a text selection survive updates; a row added above keeps the focused row’s button', async () => {
  const dead = await enqueue('live');
  const { jobs } = await ok<{ jobs: { id: number; attempt: number }[] }>('POST', '/v1/workers/claim', {
    worker: 'w',
    queues: ['live'],
    limit: 1,
  });
  const claimed = jobs[0];
  assert.equal(claimed?.id, dead);
  await ok('POST', `/v1/jobs/${dead}/fail`, {
    worker: 'w',
    attempt: claimed.attempt,
    error: 'Error: disk full\n    at write (store.ts:12:3)\n    at flush (store.ts:40:9)',
    retryable: false,
  });

  const t = await openPage();
  try {
    const { page } = t;
    await signIn(page, api.url, api.tokens.admin, `#/jobs/${dead}`);
    const trace = page.locator('pre.error-text').first();
    await trace.waitFor();
    // Select a line of the stack trace and focus the Run again button, as someone about to copy.
    await trace.evaluate((pre) => {
      const text = pre.firstChild;
      if (text === null) throw new Error('no text');
      const start = (text.textContent ?? '').indexOf('at write');
      const range = document.createRange();
      range.setStart(text, start);
      range.setEnd(text, start + 'at write (store.ts:12:3)'.length);
      getSelection()?.removeAllRanges();
      getSelection()?.addRange(range);
    });
    await page.getByRole('button', { name: 'Run again' }).focus();
    await polls(page, new RegExp(`^/v1/jobs/${dead}$`), 3);
    assert.equal(await page.evaluate(() => getSelection()?.toString()), 'at write (store.ts:12:3)');
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Run again');

    // The list: focus the newest queued job's Cancel, then a newer job lands above it.
    const focused = await enqueue('live-list');
    await page.goto(`${api.url}/#/jobs?queue=live-list`);
    const cancel = page.getByRole('button', { name: `Cancel job ${focused}` });
    await cancel.focus();
    // An expando property, not an attribute: only the very same element carries it.
    await cancel.evaluate((b) => Reflect.set(b, 'marked', true));
    // And a selection in its row (the tabs' counts and the row's times change meanwhile).
    await page
      .getByRole('row')
      .filter({ has: cancel })
      .locator('td')
      .nth(2)
      .evaluate((td) => {
        const range = document.createRange();
        range.selectNodeContents(td);
        getSelection()?.removeAllRanges();
        getSelection()?.addRange(range);
      });
    const newer = await enqueue('live-list');
    await page.getByRole('link', { name: `#${newer}`, exact: true }).waitFor();
    await page.getByRole('link', { name: 'available 2' }).waitFor();
    const active = await page.evaluate(() => ({
      label: document.activeElement?.getAttribute('aria-label'),
      same: Reflect.get(document.activeElement ?? {}, 'marked') === true,
      selection: getSelection()?.toString(),
    }));
    assert.deepEqual(active, { label: `Cancel job ${focused}`, same: true, selection: 'live-list' });

    // The checkbox that selects every job shown stays the focused element across polls too.
    const every = page.getByLabel('Select every job shown');
    await every.focus();
    await every.evaluate((box) => Reflect.set(box, 'marked', true));
    await polls(page, /^\/v1\/jobs$/, 2);
    assert.equal(
      await page.evaluate(() => Reflect.get(document.activeElement ?? {}, 'marked') === true),
      true,
      'after two polls the focus is on the very checkbox focused before them',
    );
  } finally {
    await t.close();
  }
  assert.deepEqual(t.problems, []);
});

test('keyboard only: sign in, reach the jobs page, cancel a job through the confirmation', async () => {
  const id = await enqueue('keys', 'by-keyboard');
  const t = await openPage();
  try {
    const { page } = t;
    await page.goto(`${api.url}/`);
    // The sign-in page has no section navigation to tab through.
    assert.equal(await page.getByRole('navigation', { name: 'Sections' }).isVisible(), false);
    await page.keyboard.type(api.tokens.admin);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    assert.equal(await page.getByRole('navigation', { name: 'Sections' }).isVisible(), true);

    // Focus is on the page's heading; Shift+Tab walks back up to the Jobs section.
    const jobsLink = page.getByRole('link', { name: 'Jobs', exact: true });
    for (let i = 0; i < 10 && !(await jobsLink.evaluate((a) => a === document.activeElement)); i++) {
      await page.keyboard.press('Shift+Tab');
    }
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Jobs', level: 1 }).waitFor();

    const cancel = page.getByRole('button', { name: `Cancel job ${id}` });
    await cancel.waitFor();
    for (let i = 0; i < 60 && !(await cancel.evaluate((b) => b === document.activeElement)); i++) {
      await page.keyboard.press('Tab');
    }
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: `Cancel job ${id}?` });
    await dialog.waitFor();
    // Escape keeps the job; focus returns to the button.
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    assert.equal(await cancel.evaluate((b) => b === document.activeElement), true);
    await page.keyboard.press('Enter');
    await dialog.waitFor();
    // Keep has the focus, so Enter alone would not cancel; Tab moves to the action.
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Keep');
    await screenshot(page, 'jobs-cancel-confirm');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByText(`Job ${id} cancelled (was available).`).waitFor();
  } finally {
    await t.close();
  }
  const { rows } = await api.db.pool.query<{ state: string }>('SELECT state FROM jobs WHERE id = $1', [id]);
  assert.equal(rows[0]?.state, 'cancelled');
  assert.deepEqual(t.problems, []);
});

/**
 * Selects `text` inside `within` and focuses `focus`, marking that very element (an expando, which
 * a replacement would not carry). The returned check says whether both are still as they were.
 */
async function holdPlace(
  page: Page,
  focus: Locator,
  within: Locator,
  text: string,
): Promise<() => Promise<void>> {
  await within.evaluate((root, wanted) => {
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node !== null; node = walk.nextNode()) {
      const at = (node.textContent ?? '').indexOf(wanted);
      if (at < 0) continue;
      const range = document.createRange();
      range.setStart(node, at);
      range.setEnd(node, at + wanted.length);
      getSelection()?.removeAllRanges();
      getSelection()?.addRange(range);
      return;
    }
    throw new Error(`no text ${wanted}`);
  }, text);
  await focus.focus();
  await focus.evaluate((el) => Reflect.set(el, 'marked', true));
  const label = await focus.evaluate((el) => el.getAttribute('aria-label') ?? el.textContent);
  return async () => {
    const now = await page.evaluate(() => ({
      selection: getSelection()?.toString(),
      label: document.activeElement?.getAttribute('aria-label') ?? document.activeElement?.textContent,
      same: Reflect.get(document.activeElement ?? {}, 'marked') === true,
    }));
    assert.deepEqual(now, { selection: text, label, same: true });
  };
}

test('overview: a focused queue link and a selection survive a new queue sorted above it and changing counts', async () => {
  await enqueue('live-ov-b');
  const t = await openPage();
  try {
    const { page } = t;
    await signIn(page, api.url, api.tokens.admin, '#/overview');
    const queues = page.getByRole('table', { name: 'Jobs per queue' });
    const link = queues.getByRole('link', { name: 'live-ov-b' });
    await link.waitFor();
    const check = await holdPlace(page, link, page.getByRole('region', { name: 'Leadership' }), 'Leadership');
    await enqueue('live-ov-a');
    await enqueue('live-ov-b');
    await queues.getByRole('link', { name: 'live-ov-a' }).waitFor();
    await queues
      .getByRole('row')
      .filter({ hasText: 'live-ov-b' })
      .getByRole('cell', { name: '2', exact: true })
      .waitFor();
    await check();
  } finally {
    await t.close();
  }
  assert.deepEqual(t.problems, []);
});

test('schedules and one schedule: focus and a selection survive a new schedule, a pause and a new occurrence', async () => {
  const create = async (name: string) =>
    (
      await ok<{ id: string }>('POST', '/v1/schedules', {
        name,
        spec: '0 9 * * *',
        timeZone: 'UTC',
        target: { kind: 'k' },
      })
    ).id;
  const b = await create('live-sched-b');
  const t = await openPage();
  try {
    const { page } = t;
    await signIn(page, api.url, api.tokens.admin, '#/schedules');
    const list = page.getByRole('table', { name: 'Schedules' });
    const trigger = list.getByRole('button', { name: 'Trigger live-sched-b now' });
    await trigger.waitFor();
    let check = await holdPlace(
      page,
      trigger,
      list.getByRole('row').filter({ hasText: 'live-sched-b' }),
      '0 9 * * *',
    );
    await create('live-sched-a');
    await ok('POST', `/v1/schedules/${b}/pause`);
    await list.getByRole('link', { name: 'live-sched-a' }).waitFor();
    await list.getByRole('button', { name: 'Resume live-sched-b' }).waitFor();
    await check();

    await page.goto(`${api.url}/#/schedules/${b}`);
    const heading = page.getByRole('heading', { name: 'live-sched-b paused' });
    await heading.waitFor();
    check = await holdPlace(
      page,
      page.getByRole('button', { name: 'Trigger live-sched-b now' }),
      page.locator('dl.facts'),
      '0 9 * * *',
    );
    await ok('POST', `/v1/schedules/${b}/trigger`);
    await ok('POST', `/v1/schedules/${b}/resume`);
    await page.getByRole('table', { name: 'Occurrence ledger, newest first' }).waitFor();
    await page.getByRole('heading', { name: 'live-sched-b active' }).waitFor();
    await check();
  } finally {
    await t.close();
  }
  assert.deepEqual(t.problems, []);
});

test('workflows and one workflow: focus and a selection survive a new workflow above and a node finishing', async () => {
  await ok('POST', '/v1/workflows', {
    id: 'live-wf-1',
    name: 'live one',
    nodes: [
      { id: 'first', queue: 'live-wf', kind: 'k' },
      { id: 'second', queue: 'live-wf', kind: 'k', dependsOn: ['first'] },
    ],
  });
  const t = await openPage();
  try {
    const { page } = t;
    await signIn(page, api.url, api.tokens.admin, '#/workflows');
    const list = page.getByRole('table', { name: 'Workflows, newest first' });
    const link = list.getByRole('link', { name: 'live one' });
    await link.waitFor();
    let check = await holdPlace(page, link, list.getByRole('row').filter({ hasText: 'live one' }), '0 / 2');
    await ok('POST', '/v1/workflows', {
      id: 'live-wf-2',
      name: 'live two',
      nodes: [{ id: 'x', queue: 'live-wf2', kind: 'k' }],
    });
    await list.getByRole('link', { name: 'live two' }).waitFor();
    await check();

    await page.goto(`${api.url}/#/workflows/live-wf-1`);
    await page.getByRole('heading', { name: 'live one running' }).waitFor();
    const cancel = page.getByRole('button', { name: 'Cancel workflow' });
    check = await holdPlace(page, cancel, page.locator('dl.facts'), 'live-wf-1');
    const { jobs } = await ok<{ jobs: { id: number; attempt: number }[] }>('POST', '/v1/workers/claim', {
      worker: 'w',
      queues: ['live-wf'],
      limit: 1,
    });
    const job = jobs[0];
    assert.ok(job !== undefined);
    await ok('POST', `/v1/jobs/${job.id}/complete`, { worker: 'w', attempt: job.attempt });
    await page
      .getByRole('table', { name: 'Nodes per state' })
      .getByRole('link', { name: 'succeeded' })
      .waitFor();
    await check();
  } finally {
    await t.close();
  }
  assert.deepEqual(t.problems, []);
});

test('workers: focus and a selection survive a worker registering above and a queue change', async () => {
  const slots = [{ name: 'live-w', concurrency: 2, running: 0 }];
  await workerRegister(api.db.pool, {
    id: 'live-w-1',
    host: 'host-one',
    pid: 1,
    version: '0.1.0',
    queues: slots,
    heartbeatMs: 5000,
  });
  await ok('PATCH', '/v1/queues/live-w', { maxRunning: 2 });
  const t = await openPage();
  try {
    const { page } = t;
    await signIn(page, api.url, api.tokens.admin, '#/workers');
    const edit = page.getByRole('button', { name: 'Edit queue live-w' });
    await edit.waitFor();
    const check = await holdPlace(
      page,
      edit,
      page.getByRole('table', { name: 'Worker processes' }).getByRole('row').filter({ hasText: 'live-w-1' }),
      'host-one',
    );
    await workerRegister(api.db.pool, {
      id: 'live-w-0',
      host: 'host-zero',
      pid: 2,
      version: '0.1.0',
      queues: slots,
      heartbeatMs: 5000,
    });
    await ok('PATCH', '/v1/queues/live-w', { maxRunning: 5 });
    await page.getByText('host-zero').waitFor();
    await page.getByRole('table', { name: 'Queue changes' }).getByText('maxRunning 2 → 5').waitFor();
    await check();
  } finally {
    await t.close();
  }
  assert.deepEqual(t.problems, []);
});
