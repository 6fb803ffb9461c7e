/** Scheduler processes for the failure stories: short leases so each story runs in seconds. */
import { spawnTidemark, type SpawnOptions, type TidemarkProcess } from '../support/processes.ts';

/** TTL 2 s, renew 500 ms, tick 200 ms: the production defaults (10 s / 3 s / 1 s) scaled down. */
export const FAST = { ttlMs: 2000, renewMs: 500, tickMs: 200 };

export function startScheduler(
  url: string,
  args: string[] = [],
  options: SpawnOptions = {},
): TidemarkProcess {
  return spawnTidemark(
    [
      'scheduler',
      '--lease-ttl',
      `${FAST.ttlMs}ms`,
      '--renew-every',
      `${FAST.renewMs}ms`,
      '--tick',
      `${FAST.tickMs}ms`,
      ...args,
    ],
    { ...options, env: { DATABASE_URL: url, TIDEMARK_LOG_LEVEL: 'warn', ...options.env } },
  );
}

/** The next whole second at least `leadMs` from now: a clean first fire time for `every 1s` schedules. */
export function nextWholeSecond(leadMs: number): Date {
  return new Date(Math.ceil((Date.now() + leadMs) / 1000) * 1000);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
