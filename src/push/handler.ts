/**
 * The push target as a handler of the worker: a job of kind `http.post` (target.ts) is run by the
 * same claim loops, leases, wake-ups and batched completion as any other job; only this handler
 * knows about HTTP. It POSTs the payload's body with `Idempotency-Key` (the job's key, identical on
 * every attempt), `Tidemark-Job-Id`, `Tidemark-Attempt` and `Tidemark-Deadline`.
 *
 * Outcome rules: 2xx succeeds; 408, 429, 5xx, network errors and timeouts are retried under the
 * job's retry policy (a `Retry-After` longer than the backoff wins, through RetryAfterError); any
 * other status fails the job without retry (dead letter). Each request's timeout is what is left of
 * the job's deadline, capped by `requestTimeoutMs`; at most `perHostConcurrency` requests of one
 * worker run against one host:port at a time. Cancellation, the deadline and shutdown abort the
 * request through the attempt's signal.
 */
import type { Clock } from '../clock.ts';
import { systemClock } from '../clock.ts';
import { JobTimeoutError, NonRetryableError, RetryAfterError } from '../worker/errors.ts';
import type { HandlerContext, Handlers } from '../worker/handler.ts';
import { HostLimiter } from './host-limiter.ts';
import { PUSH_KIND, pushPayloadParse } from './target.ts';

export interface PushOptions {
  /** Most requests in flight to one host (host:port) from this worker. Default 8. */
  perHostConcurrency?: number;
  /** Longest a request may take, whatever the job's own timeout. Default 30 s. */
  requestTimeoutMs?: number;
  /** Wall time for Tidemark-Deadline and Retry-After dates, monotonic time for the timeout. */
  clock?: Clock;
}

export const PUSH_DEFAULTS = { perHostConcurrency: 8, requestTimeoutMs: 30_000 } as const;

const RETRYABLE_STATUS = (status: number): boolean => status === 408 || status === 429 || status >= 500;

/** Retry-After as seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterMs(header: string | null, nowMs: number): number | null {
  if (header === null) return null;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}

function positiveInt(value: number, field: string): number {
  if (!Number.isSafeInteger(value) || value < 1)
    throw new TypeError(`push.${field}: must be a positive integer, got ${value}`);
  return value;
}

/**
 * The handlers that run push jobs, to give a Worker (`handlers: { ...pushHandlers(), … }`) whose
 * queues include the push queue (`http` unless the jobs name another). One limiter per call: every
 * push queue of that worker shares its per-host bound.
 */
export function pushHandlers(options: PushOptions = {}): Handlers {
  const perHost = positiveInt(
    options.perHostConcurrency ?? PUSH_DEFAULTS.perHostConcurrency,
    'perHostConcurrency',
  );
  const requestTimeoutMs = positiveInt(
    options.requestTimeoutMs ?? PUSH_DEFAULTS.requestTimeoutMs,
    'requestTimeoutMs',
  );
  const clock = options.clock ?? systemClock;
  const hosts = new HostLimiter(perHost);
  return {
    [PUSH_KIND]: async (ctx: HandlerContext): Promise<void> => {
      const startedAt = clock.monotonicMs();
      const target = pushPayloadParse(ctx.payload);
      if (typeof target === 'string') throw new NonRetryableError(target);
      const url = new URL(target.url);
      const release = await hosts.acquire(url.host, ctx.signal);
      try {
        const jobLeft = ctx.timeoutMs === null ? Infinity : ctx.timeoutMs - (clock.monotonicMs() - startedAt);
        const timeoutMs = Math.max(0, Math.ceil(Math.min(jobLeft, requestTimeoutMs)));
        await deliver(ctx, url, target.body, timeoutMs, clock);
      } finally {
        release();
      }
    },
  };
}

async function deliver(
  ctx: HandlerContext,
  url: URL,
  body: unknown,
  timeoutMs: number,
  clock: Clock,
): Promise<void> {
  const where = `${url.origin}${url.pathname}`;
  const timeout = AbortSignal.timeout(timeoutMs);
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': ctx.idempotencyKey,
        'tidemark-job-id': String(ctx.jobId),
        'tidemark-attempt': String(ctx.attempt),
        'tidemark-deadline': new Date(clock.now().getTime() + timeoutMs).toISOString(),
      },
      body: JSON.stringify(body),
      signal: AbortSignal.any([timeout, ctx.signal]),
      redirect: 'manual',
    });
    // Drain the body so the connection is reused; its content is not needed.
    await response.arrayBuffer().catch(() => undefined);
  } catch (error) {
    if (timeout.aborted && !ctx.signal.aborted)
      throw new JobTimeoutError(`${where}: no answer within ${timeoutMs} ms`, { cause: error });
    throw new Error(`${where}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  if (response.status >= 200 && response.status < 300) return;
  const message = `${where} answered ${response.status}`;
  if (!RETRYABLE_STATUS(response.status)) throw new NonRetryableError(message);
  const wait = retryAfterMs(response.headers.get('retry-after'), clock.now().getTime());
  throw wait === null ? new Error(message) : new RetryAfterError(message, wait);
}
