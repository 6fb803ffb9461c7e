/// <reference lib="dom" />
/**
 * The dashboard's only way to the server: the HTTP API with the signed-in bearer token. The token is
 * kept in sessionStorage, so it lives as long as the tab and is not shared with other tabs or written
 * to disk by the browser beyond the session.
 */
import type { ApiErrorBody } from './types.ts';

const TOKEN_KEY = 'tidemark.token';

export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fields: { field: string; reason: string }[] = [],
  ) {
    super(message);
  }

  /** One line a person can act on: the message and each bad field with its reason. */
  describe(): string {
    const fields = this.fields.map((f) => `${f.field}: ${f.reason}`).join('; ');
    return fields === '' ? this.message : `${this.message} (${fields})`;
  }
}

export function tokenGet(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function tokenSet(token: string | null): void {
  if (token === null) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token);
}

/** Fired when the server refuses the token (revoked meanwhile): the app shows the sign-in form. */
export const SIGNED_OUT = 'tidemark:signed-out';

function isErrorBody(value: unknown): value is ApiErrorBody {
  return typeof value === 'object' && value !== null && 'error' in value;
}

export async function request<T>(
  method: string,
  path: string,
  options: { body?: unknown; token?: string; signal?: AbortSignal } = {},
): Promise<T> {
  const token = options.token ?? tokenGet();
  const headers: Record<string, string> = { accept: 'application/json' };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  let body: string | undefined;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] = 'application/json';
  }
  let response: Response;
  try {
    response = await fetch(path, { method, headers, body, signal: options.signal });
  } catch (error) {
    if (error instanceof DOMException && error.name === 'AbortError') throw error;
    throw new ApiError(0, 'network', 'the server did not answer (is it running?)');
  }
  const text = await response.text();
  let parsed: unknown = null;
  if (text !== '') {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
  }
  if (!response.ok) {
    if (response.status === 401 && options.token === undefined) {
      tokenSet(null);
      window.dispatchEvent(new Event(SIGNED_OUT));
    }
    if (isErrorBody(parsed)) {
      const e = parsed.error;
      throw new ApiError(response.status, e.code, e.message, e.fields ?? []);
    }
    throw new ApiError(response.status, 'http', `HTTP ${response.status}`);
  }
  return parsed as T;
}

export const get = <T>(path: string, signal?: AbortSignal) => request<T>('GET', path, { signal });
export const post = <T>(path: string, body?: unknown) => request<T>('POST', path, { body });
export const patch = <T>(path: string, body: unknown) => request<T>('PATCH', path, { body });
export const del = <T>(path: string) => request<T>('DELETE', path);

/** Query string from the defined, non-empty values. */
export function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s === '' ? '' : `?${s}`;
}

/** GET /metrics needs no token; it is cluster-wide, so the app asks for it only with an admin token. */
export async function metricsText(signal?: AbortSignal): Promise<string> {
  const response = await fetch('/metrics', { signal });
  if (!response.ok) throw new ApiError(response.status, 'http', `GET /metrics: HTTP ${response.status}`);
  return response.text();
}
