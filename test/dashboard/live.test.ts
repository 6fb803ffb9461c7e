/**
 * Pages that poll update in place: the element an operator has focused and the text they have
 * selected are still there after the data beside them changed, and a row added above a focused row
 * does not turn its button into another job's. And every action of the jobs page works from the
 * keyboard alone: sign in, move between sections, cancel with the confirmation.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Page } from 'playwright-core';
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
    const newer = await enqueue('live-list');
    await page.getByRole('link', { name: `#${newer}`, exact: true }).waitFor();
    const active = await page.evaluate(() => ({
      label: document.activeElement?.getAttribute('aria-label'),
      same: Reflect.get(document.activeElement ?? {}, 'marked') === true,
    }));
    assert.deepEqual(active, { label: `Cancel job ${focused}`, same: true });
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
