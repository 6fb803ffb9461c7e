/**
 * Driving the dashboard with the keyboard alone: sign in by typing, move with Tab and Shift+Tab
 * until a control has the focus (each stop checked to show a visible focus ring), and check a
 * dialog keeps the focus inside it.
 */
import assert from 'node:assert/strict';
import type { Locator, Page } from 'playwright-core';

/** Opens `hash` and signs in by typing the token into the field that has the focus on load. */
export async function signInByKeyboard(
  page: Page,
  baseUrl: string,
  token: string,
  hash: string,
): Promise<void> {
  await page.goto(`${baseUrl}/${hash}`);
  await page.getByLabel('API token').waitFor();
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'token');
  await page.keyboard.type(token);
  await page.keyboard.press('Enter');
  await page.getByRole('navigation', { name: 'Sections' }).waitFor();
}

/**
 * Waits for the focus to come to rest on something other than the page itself after an action: the
 * page shows the outcome, redraws, and only then gives the focus to the outcome if its control went.
 */
export async function assertFocusKept(page: Page): Promise<void> {
  try {
    await page.waitForFunction(
      () => document.activeElement !== null && document.activeElement !== document.body,
      null,
      {
        timeout: 5000,
      },
    );
  } catch {
    assert.fail('the focus was lost to the top of the page after the action');
  }
}

const isFocused = (target: Locator): Promise<boolean> =>
  target.evaluate((el) => el === document.activeElement || el.contains(document.activeElement));

/**
 * Presses Tab (or Shift+Tab) until `target` has the focus, at most `max` times, then checks the focus
 * shows: `:focus-visible` matches and draws an outline (SVG links draw theirs on the node's box).
 */
export async function tabTo(
  page: Page,
  target: Locator,
  options: { back?: boolean; max?: number } = {},
): Promise<void> {
  await target.waitFor();
  const key = options.back === true ? 'Shift+Tab' : 'Tab';
  const max = options.max ?? 60;
  for (let i = 0; !(await isFocused(target)); i++) {
    if (i >= max) {
      const at = await page.evaluate(() => document.activeElement?.outerHTML.slice(0, 160));
      assert.fail(`${key} ×${max} did not reach ${target.toString()}; the focus is on ${at}`);
    }
    await page.keyboard.press(key);
  }
  const ring = await page.evaluate(() => {
    const el = document.activeElement;
    if (el === null) return 'nothing focused';
    if (!el.matches(':focus-visible')) return `${el.tagName} does not match :focus-visible`;
    if (el instanceof SVGElement) return 'ok';
    const style = getComputedStyle(el);
    return style.outlineStyle === 'none' || style.outlineWidth === '0px'
      ? `${el.tagName} draws no outline`
      : 'ok';
  });
  assert.equal(ring, 'ok', `the focus on ${target.toString()} is visible`);
}

/**
 * Waits until the focused element's text matches: an action's outcome is written, then the list
 * redraws, then the focus moves to the outcome, each a step the page takes after the text appears.
 */
export async function focusSettlesOn(page: Page, pattern: RegExp, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let text = await focusedText(page);
  while (!pattern.test(text) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    text = await focusedText(page);
  }
  assert.match(text, pattern);
}

/** Which element has the focus, for messages and comparisons. */
export function focusedText(page: Page): Promise<string> {
  return page.evaluate(
    () =>
      document.activeElement?.getAttribute('aria-label') ?? document.activeElement?.textContent?.trim() ?? '',
  );
}

/**
 * The open dialog keeps the focus: Tab past its last control comes back to its first, Shift+Tab
 * before its first goes to its last. Leaves the focus where it found it.
 */
export async function assertTrapsFocus(page: Page, dialog: Locator): Promise<void> {
  const start = await focusedText(page);
  const count = await dialog.evaluate(
    (d) =>
      Array.from(
        d.querySelectorAll(
          'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea, summary, [tabindex]:not([tabindex="-1"])',
        ),
      ).filter((el) => el.getClientRects().length > 0).length,
  );
  for (let i = 0; i < count; i++) {
    await page.keyboard.press('Tab');
    assert.equal(await isFocused(dialog), true, 'Tab stays in the dialog');
  }
  assert.equal(await focusedText(page), start, `Tab ×${count} comes round to where it started`);
  for (let i = 0; i < count; i++) {
    await page.keyboard.press('Shift+Tab');
    assert.equal(await isFocused(dialog), true, 'Shift+Tab stays in the dialog');
  }
  assert.equal(await focusedText(page), start, `Shift+Tab ×${count} comes round to where it started`);
}
