/**
 * The API's one error shape: every error leaves as
 * `{ error: { code, message, fields?, currentVersion?, requestId } }`, `code` one of ERROR_CODES
 * (listed in docs/api.md). Anything not recognised here is logged with its request id and answered as
 * a bare 500, never with its message or stack, which may name tables, hosts or values from another
 * tenant.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';

export interface FieldError {
  /** Where the bad value is: `body.spec`, `query.limit`, `params.id`. */
  field: string;
  reason: string;
}

/** Every `error.code` the API answers with; clients may switch on these. */
export const ERROR_CODES = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  signal_not_declared: 404,
  conflict: 409,
  version_conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  client_error: 400,
  internal: 500,
  unavailable: 503,
} as const;
export type ErrorCode = keyof typeof ERROR_CODES;

export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly fields?: FieldError[],
    options?: ErrorOptions & { currentVersion?: number },
  ) {
    super(message, options);
    this.currentVersion = options?.currentVersion;
  }
  readonly currentVersion: number | undefined;
}

export function notFound(what: string): ApiError {
  return new ApiError(404, 'not_found', `${what} not found`);
}

export function badRequest(fields: FieldError[], options?: ErrorOptions): ApiError {
  return new ApiError(
    400,
    'invalid_request',
    fields.map((f) => `${f.field}: ${f.reason}`).join('; '),
    fields,
    options,
  );
}

export function conflict(message: string): ApiError {
  return new ApiError(409, 'conflict', message);
}

/** A write made against a version that is no longer current; the body carries the current one. */
export function versionConflict(message: string, currentVersion: number, options?: ErrorOptions): ApiError {
  return new ApiError(409, 'version_conflict', message, undefined, { ...options, currentVersion });
}

/** A validation failure from the schema compiler (see validation.ts), before the handler runs. */
export class ValidationFailure extends Error {
  override name = 'ValidationFailure';
  constructor(readonly fields: FieldError[]) {
    super(fields.map((f) => `${f.field}: ${f.reason}`).join('; '));
  }
}

// Fastify's own client errors (bad JSON, wrong content type, body too large, …) carry a 4xx status
// and a message written for clients; those pass through with a stable code.
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_request',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_request',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_request',
};

/**
 * Longest path segment the router accepts, as sent (percent-encoded): a 200-character workflow id
 * or signal name of 3-byte characters is 1,800. Longer ones are a 400 naming `params`; the
 * parameter's schema bounds the decoded length.
 */
export const MAX_PARAM_LENGTH = 2048;

// The router's refusals of a path, before any schema sees it.
const ROUTER_FIELDS: Record<string, FieldError> = {
  FST_ERR_BAD_URL: { field: 'params', reason: 'a path segment is not valid percent-encoded UTF-8' },
  FST_ERR_MAX_PARAM_LENGTH: {
    field: 'params',
    reason: `a path segment is longer than ${MAX_PARAM_LENGTH} characters`,
  },
};

export function handleError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const requestId = request.id;
  const routerField = ROUTER_FIELDS[error.code];
  if (routerField !== undefined) {
    const fields = [routerField];
    void reply.status(400).send({
      error: {
        code: 'invalid_request',
        message: `${routerField.field}: ${routerField.reason}`,
        fields,
        requestId,
      },
    });
    return;
  }
  if (error instanceof ApiError) {
    void reply.status(error.status).send({
      error: {
        code: error.code,
        message: error.message,
        fields: error.fields,
        currentVersion: error.currentVersion,
        requestId,
      },
    });
    return;
  }
  const failure = error.cause instanceof ValidationFailure ? error.cause : error;
  if (failure instanceof ValidationFailure) {
    void reply.status(400).send({
      error: { code: 'invalid_request', message: failure.message, fields: failure.fields, requestId },
    });
    return;
  }
  if (isDatabaseUnavailable(error)) {
    request.log.warn({ err: error, requestId }, 'database unavailable');
    void reply
      .status(503)
      .header('retry-after', '1')
      .send({ error: { code: 'unavailable', message: 'database unavailable; retry shortly', requestId } });
    return;
  }
  const status = typeof error.statusCode === 'number' ? error.statusCode : 500;
  if (status >= 400 && status < 500) {
    const code = FASTIFY_CODES[error.code] ?? (status === 400 ? 'invalid_request' : 'client_error');
    void reply.status(status).send({ error: { code, message: error.message, requestId } });
    return;
  }
  request.log.error({ err: error, requestId }, 'unhandled error');
  void reply.status(500).send({ error: { code: 'internal', message: 'internal error', requestId } });
}

// Lost or refused connections, and the server saying it cannot take work now (SQLSTATE class 08,
// 57P01-57P03 shutdown, 53300 too many connections). The request did not reach a decision, so
// it is 503 and safe to retry, not a 500.
const UNAVAILABLE_ERRNO = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
]);
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[123]|53300)$/;

function isDatabaseUnavailable(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (UNAVAILABLE_ERRNO.has(code) || UNAVAILABLE_SQLSTATE.test(code)))
      return true;
    if (
      /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
        e.message,
      )
    )
      return true;
  }
  return false;
}
