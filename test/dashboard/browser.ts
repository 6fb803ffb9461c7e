/**
 * Headless Chromium (Debian's package, installed by npm test: scripts/test-tools.ts) driven by
 * playwright-core, one browser per test file and a fresh context per test, so each test signs in
 * with an empty sessionStorage. Every page's console errors and uncaught exceptions are collected
 * so tests can assert there were none.
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { after } from 'node:test';
import { chromium, type Browser, type ConsoleMessage, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
export const ARTIFACTS = new URL('../../artifacts/', import.meta.url);
/** Laptop width: what the dashboard must read well at. */
export const VIEWPORT = { width: 1366, height: 768 };

let browser: Promise<Browser> | undefined;

function launch(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `no Chromium at ${CHROMIUM}: install it with 'sudo apt-get install -y chromium' (npm test does so itself as root)`,
    );
  }
  browser ??= chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return browser;
}

// A launch that failed must not fail this hook too: the file's other hooks (its API server, its
// database pool) still have to close, or the file's process never exits.
after(async () => {
  await (await browser?.catch(() => undefined))?.close();
});

export interface ConsoleProblem {
  text: string;
  url: string;
}

export interface TestPage {
  page: Page;
  /** console.error messages and uncaught exceptions, in order. */
  problems: ConsoleProblem[];
  close(): Promise<void>;
}

export async function openPage(): Promise<TestPage> {
  const context = await (await launch()).newContext({ viewport: VIEWPORT });
  const page = await context.newPage();
  const problems: ConsoleProblem[] = [];
  page.on('console', (message: ConsoleMessage) => {
    if (message.type() === 'error') problems.push({ text: message.text(), url: message.location().url });
  });
  page.on('pageerror', (error) => problems.push({ text: `uncaught: ${error.message}`, url: '' }));
  return { page, problems, close: () => context.close() };
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await mkdir(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: new URL(`dashboard-${name}.png`, ARTIFACTS).pathname, fullPage: true });
}

export async function signIn(page: Page, baseUrl: string, token: string, hash = '#/overview'): Promise<void> {
  await page.goto(`${baseUrl}/${hash}`);
  await page.getByLabel('API token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Sections' }).waitFor();
}
