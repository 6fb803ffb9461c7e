/// <reference lib="dom" />
/** What every page gets from the router, and the polling helper they share. */
import { ApiError } from './api.ts';
import { notice } from './dom.ts';
import type { Session } from './session.ts';

export interface PageContext {
  session: Session;
  /** The page's own region; replaced wholesale on navigation. */
  main: HTMLElement;
  /** Parts of the hash route after the page name: `#/jobs/42` gives ['42']. */
  params: string[];
  /** The query part of the hash route: `#/jobs?state=dead`. */
  query: URLSearchParams;
  /** Aborted when the user navigates away: pending reads are dropped, polling stops. */
  signal: AbortSignal;
}

export type Page = (ctx: PageContext) => Promise<void>;

/**
 * Runs `tick` now and then every `ms` until the page is left. A failing tick shows its error in
 * `status` and polling goes on, so a server restart heals by itself.
 */
export function poll(ctx: PageContext, ms: number, status: HTMLElement, tick: () => Promise<void>): void {
  let timer: number | undefined;
  const run = async (): Promise<void> => {
    try {
      await tick();
      if (status.dataset.failed === 'true') {
        status.replaceChildren();
        status.dataset.failed = 'false';
      }
    } catch (error) {
      if (ctx.signal.aborted) return;
      status.replaceChildren(notice(errorText(error), 'error'));
      status.dataset.failed = 'true';
    }
    if (!ctx.signal.aborted) timer = window.setTimeout(() => void run(), ms);
  };
  ctx.signal.addEventListener('abort', () => window.clearTimeout(timer));
  void run();
}

export function errorText(error: unknown): string {
  if (error instanceof ApiError) return error.describe();
  if (error instanceof Error) return error.message;
  return String(error);
}

/** Whether the server documents this route; pages whose routes are missing say so. */
export function missingRoutes(ctx: PageContext, routes: string[]): string[] {
  return routes.filter((r) => !ctx.session.routes.has(r));
}

/**
 * After an action has redrawn the page: when the control that had the focus is gone (a row that left
 * the list, a button its own action removed or disabled), the focus goes to the first thing in
 * `region` (the status line saying what happened) rather than back to the top of the document, so
 * a keyboard user hears the outcome and carries on from there.
 */
export function focusIfLost(region: HTMLElement): void {
  const active = document.activeElement;
  const gone =
    active === null ||
    active === document.body ||
    !active.isConnected ||
    (active instanceof HTMLButtonElement && active.disabled);
  if (!gone) return;
  const target = region.firstElementChild instanceof HTMLElement ? region.firstElementChild : region;
  if (!target.hasAttribute('tabindex')) target.tabIndex = -1;
  target.focus();
}
