/**
 * The CLI's view of the HTTP API: `--url`/`TIDEMARK_URL`, `--token`/`TIDEMARK_TOKEN`, JSON in and
 * out, and errors that carry the API's own message (printed as is, exit code 1).
 */
import { parseCanonicalInteger } from '../../input.ts';
import { UsageError } from '../usage-error.ts';

export const DEFAULT_URL = 'http://127.0.0.1:8787';

export class ApiCallError extends Error {
  override name = 'ApiCallError';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export class ApiClient {
  readonly #base: string;
  readonly #token: string;

  constructor(base: string, token: string) {
    this.#base = base.replace(/\/+$/, '');
    this.#token = token;
  }

  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    let response: Response;
    try {
      response = await fetch(`${this.#base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.#token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (error) {
      const reason =
        error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error);
      throw new ApiCallError(0, `cannot reach ${this.#base}: ${reason}`);
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (!response.ok) {
      const error = (
        parsed as { error?: { message?: string; fields?: { field: string; reason: string }[] } } | undefined
      )?.error;
      const retry = response.headers.get('retry-after');
      const message = error?.message ?? (text.trim() || response.statusText);
      throw new ApiCallError(
        response.status,
        `${response.status}: ${message}${retry === null ? '' : ` (retry after ${retry} s)`}`,
      );
    }
    return parsed as T;
  }
}

/** The options every API command takes. */
export const CONNECTION_OPTIONS = {
  url: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export function apiClient(values: { url?: string; token?: string }): ApiClient {
  const url = values.url ?? process.env.TIDEMARK_URL ?? DEFAULT_URL;
  const token = values.token ?? process.env.TIDEMARK_TOKEN;
  if (token === undefined || token === '') {
    throw new UsageError('no token: pass --token or set TIDEMARK_TOKEN (`tidemark dev` prints one)');
  }
  return new ApiClient(url, token);
}

export function parseJsonOption(name: string, value: string | undefined): unknown {
  if (value === undefined) return undefined;
  try {
    return JSON.parse(value);
  } catch (error) {
    throw new UsageError(`--${name}: not JSON (${error instanceof Error ? error.message : String(error)})`);
  }
}

/**
 * An integer flag, read as the API reads one in a query string (canonical decimal only); its range
 * is left to the API, so a flag and a body field out of range get the same message.
 */
export function parseIntOption(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = parseCanonicalInteger(value);
  if (n === undefined || !Number.isSafeInteger(n))
    throw new UsageError(`--${name}: ${value} is not an integer`);
  return n;
}

export function requireArg(args: string[], index: number, what: string): string {
  const value = args[index];
  if (value === undefined || value === '') throw new UsageError(`missing ${what}`);
  return value;
}

/**
 * Progress of a long operation on stderr, so `--json` output on stdout stays clean: one updating
 * line on a terminal, one line per step (a chunk of up to 1,000) otherwise.
 */
export function progress(label: string, done: number, total: number | null): void {
  const text = `${label}: ${done}${total === null ? '' : `/${total}`}`;
  if (!process.stderr.isTTY) process.stderr.write(`${text}\n`);
  else process.stderr.write(`\r${text}${total !== null && done === total ? '\n' : ''}`);
}
