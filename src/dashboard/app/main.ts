/// <reference lib="dom" />
/**
 * The dashboard's entry: sign-in with a token, then a hash router over the pages. Hash routes keep
 * the server side to one static page (`/`), and make every view a link an operator can share.
 */
import { SIGNED_OUT, tokenGet, tokenSet } from './api.ts';
import { h, notice, show } from './dom.ts';
import { errorText, type Page } from './page.ts';
import { deadLetterPage } from './pages/dead-letter.ts';
import { jobsPage } from './pages/job-list.ts';
import { overviewPage } from './pages/overview.ts';
import { schedulesPage } from './pages/schedules.ts';
import { workersPage } from './pages/workers.ts';
import { workflowsPage } from './pages/workflows.ts';
import { sessionOpen, type Session } from './session.ts';

const PAGES: Record<string, { title: string; page: Page }> = {
  overview: { title: 'Overview', page: overviewPage },
  schedules: { title: 'Schedules', page: schedulesPage },
  jobs: { title: 'Jobs', page: jobsPage },
  'dead-letter': { title: 'Dead letter', page: deadLetterPage },
  workflows: { title: 'Workflows', page: workflowsPage },
  workers: { title: 'Workers', page: workersPage },
};

const main = document.getElementById('main') as HTMLElement;
const nav = document.getElementById('nav') as HTMLElement;
const who = document.getElementById('who') as HTMLElement;
let session: Session | null = null;
let leave: AbortController | null = null;

function route(): { name: string; params: string[]; query: URLSearchParams } {
  const [path = '', q = ''] = location.hash.replace(/^#\/?/, '').split('?');
  const [name = 'overview', ...params] = path.split('/').filter((p) => p !== '');
  return { name, params, query: new URLSearchParams(q) };
}

async function render(): Promise<void> {
  leave?.abort();
  leave = new AbortController();
  if (session === null) return;
  const { name, params, query } = route();
  const entry = PAGES[name] ?? PAGES.overview;
  if (entry === undefined) return;
  document.title = `${entry.title} · Tidemark`;
  nav.querySelectorAll('a').forEach((a) => {
    if (a.dataset.page === (PAGES[name] === undefined ? 'overview' : name))
      a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  });
  try {
    await entry.page({ session, main, params, query, signal: leave.signal });
  } catch (error) {
    if (!leave.signal.aborted) show(main, notice(errorText(error), 'error'));
  }
  // Keyboard and screen-reader users land on the new page's heading, not at the top of the nav.
  const heading = main.querySelector('h1');
  if (heading !== null) {
    heading.tabIndex = -1;
    heading.focus();
  }
}

function signInForm(message?: string): void {
  nav.hidden = true;
  show(who);
  const input = h('input', {
    id: 'token',
    name: 'token',
    type: 'password',
    required: true,
    autocomplete: 'off',
    spellcheck: 'false',
    'aria-describedby': 'token-hint',
  });
  const status = h('div', { 'aria-live': 'polite' });
  const button = h('button', { type: 'submit' }, 'Sign in');
  show(
    main,
    h(
      'form',
      {
        class: 'sign-in',
        'aria-labelledby': 'sign-in-h',
        onsubmit: (event: Event) => {
          event.preventDefault();
          button.disabled = true;
          const token = input.value.trim();
          sessionOpen(token)
            .then((s) => {
              tokenSet(token);
              start(s);
            })
            .catch((error: unknown) => show(status, notice(`Not signed in: ${errorText(error)}`, 'error')))
            .finally(() => {
              button.disabled = false;
            });
        },
      },
      h('h1', { id: 'sign-in-h', tabindex: -1 }, 'Sign in to Tidemark'),
      h('label', { for: 'token' }, 'API token'),
      input,
      h(
        'small',
        { id: 'token-hint' },
        'An admin token sees every tenant; a tenant token sees only its own. `tidemark dev` prints one as TIDEMARK_TOKEN. It is kept for this tab only.',
      ),
      button,
      status,
      message === undefined ? null : notice(message, 'error'),
    ),
  );
  input.focus();
}

function start(s: Session): void {
  session = s;
  nav.hidden = false;
  show(
    who,
    h('span', {}, s.admin ? 'Admin token' : `Tenant ${s.tenantId ?? '?'}`),
    h(
      'button',
      {
        type: 'button',
        class: 'link',
        onclick: () => {
          tokenSet(null);
          session = null;
          leave?.abort();
          signInForm();
        },
      },
      'Sign out',
    ),
  );
  void render();
}

window.addEventListener('hashchange', () => {
  // In-page anchors such as the skip link are not routes.
  if (location.hash === '' || location.hash.startsWith('#/')) void render();
});
window.addEventListener(SIGNED_OUT, () => {
  session = null;
  leave?.abort();
  signInForm('The server refused the token (revoked or unknown): sign in again.');
});

const saved = tokenGet();
if (saved === null) signInForm();
else
  sessionOpen(saved).then(start, (error: unknown) => {
    tokenSet(null);
    signInForm(errorText(error));
  });
