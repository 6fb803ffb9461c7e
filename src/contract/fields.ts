/**
 * The field schemas every input shares, whichever entry point it comes through (the client, the
 * HTTP API, the CLI over the API). Every number that reaches an `integer` column is bounded to
 * PostgreSQL's int4 range, so an out-of-range value is refused naming the field, not a database error.
 */
import { Type } from '@sinclair/typebox';

export const INT4_MAX = 2_147_483_647;

export const PositiveInt4 = (description: string) =>
  Type.Integer({ minimum: 1, maximum: INT4_MAX, description });
export const NonNegativeInt4 = (description: string) =>
  Type.Integer({ minimum: 0, maximum: INT4_MAX, description });

export const TenantId = Type.String({
  pattern: '^[a-z0-9][a-z0-9_-]{0,62}$',
  description: 'tenant id: lower-case letters, digits, _ and -, up to 63 characters',
});

export const QueueName = Type.String({
  pattern: '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$',
  description: 'queue name: letters, digits, _ . : and -, up to 128 characters',
});

export const Uuid = Type.String({ format: 'uuid' });

export const JobId = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'job id' });

/** A handler name (job kind), a node key, a workflow name: short free text. */
export const Name = Type.String({ minLength: 1, maxLength: 200 });

/** A page size: how many items a list returns at most. */
export const PageLimit = Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'page size' });

/** An instant on the wire: RFC 3339 with an offset (the client also takes a Date). */
export const DateTime = (description: string) => Type.String({ format: 'date-time', description });

/** A job's priority, higher first, within ±1,000,000. */
export const PRIORITY_LIMIT = 1_000_000;
export const Priority = Type.Integer({
  minimum: -PRIORITY_LIMIT,
  maximum: PRIORITY_LIMIT,
  description: 'higher runs first',
});

/** First try plus retries, at most 1,000. */
export const MAX_ATTEMPTS_LIMIT = 1000;
export const MaxAttempts = Type.Integer({
  minimum: 1,
  maximum: MAX_ATTEMPTS_LIMIT,
  description: 'first try plus retries',
});

/**
 * Where work goes, shared by a job and a schedule's target: a queue and either a handler `kind` or
 * a push `url` (`pushes` says what is POSTed there, since a schedule posts once per occurrence).
 */
export function targetFields(pushes: string) {
  return {
    queue: Type.Optional(QueueName),
    kind: Type.Optional(Type.String({ ...Name, description: 'handler name; omit when `url` is given' })),
    url: Type.Optional(
      Type.String({ format: 'uri', maxLength: 2000, description: `push target: ${pushes}` }),
    ),
  };
}
