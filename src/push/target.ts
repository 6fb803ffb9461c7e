/**
 * A job that targets a URL instead of an in-process handler. It is an ordinary job of kind
 * `http.post` whose payload carries the URL and the body to send, so schedules, retries, the dead
 * letter and workflows treat it like any other job and only the push handler (handler.ts) knows
 * about HTTP.
 */
export const PUSH_KIND = 'http.post';
/** Push jobs go to this queue unless the caller names another; a push worker claims from it. */
export const PUSH_QUEUE = 'http';

export interface PushPayload {
  url: string;
  /** Sent as the JSON request body. */
  body: unknown;
}

export function pushPayload(url: string, body: unknown): PushPayload {
  return { url, body: body ?? null };
}

/**
 * A job or schedule target that POSTs `body` to `url`: spread it into `client.jobs.enqueue({…})`, a
 * schedule's `target` or a workflow's job node. The URL is checked here, before anything is written.
 */
export function pushTarget(
  url: string,
  body?: unknown,
  queue: string = PUSH_QUEUE,
): { queue: string; kind: typeof PUSH_KIND; payload: PushPayload } {
  const payload = pushPayloadParse(pushPayload(url, body));
  if (typeof payload === 'string') throw new TypeError(payload.replace('payload.url', 'url'));
  return { queue, kind: PUSH_KIND, payload };
}

/** The URL and body of a push job's payload, or an error message naming what is wrong. */
export function pushPayloadParse(payload: unknown): PushPayload | string {
  if (typeof payload !== 'object' || payload === null) return 'payload: not an object';
  const { url, body } = payload as { url?: unknown; body?: unknown };
  if (typeof url !== 'string' || !URL.canParse(url)) return 'payload.url: not a URL';
  const { protocol } = new URL(url);
  if (protocol !== 'http:' && protocol !== 'https:') return `payload.url: ${protocol} is not http or https`;
  return { url, body: body ?? null };
}
