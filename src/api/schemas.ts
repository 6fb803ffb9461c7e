/**
 * Schemas shared by several routes. Every number that reaches an `integer` column is bounded to
 * PostgreSQL's int4 range here, so an out-of-range value is a 400 naming the field, not a 500 from
 * the database.
 */
import { Type, type TSchema } from '@sinclair/typebox';

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

export const ErrorBody = Type.Object(
  {
    error: Type.Object({
      code: Type.String({ description: 'stable: one of the codes listed in docs/api.md' }),
      message: Type.String(),
      fields: Type.Optional(
        Type.Array(Type.Object({ field: Type.String(), reason: Type.String() }), {
          description: 'each bad value (`body.spec`, `query.limit`, `params.id`) and why',
        }),
      ),
      currentVersion: Type.Optional(
        Type.Integer({ description: 'version_conflict only: the version the resource is at now' }),
      ),
      requestId: Type.String(),
    }),
  },
  { $id: 'Error', description: 'every error response' },
);

/** The error responses a route declares in OpenAPI, beside its own 2xx ones. */
export function withErrors(ok: Record<number, TSchema>, errors: number[] = [400, 401, 404, 429]) {
  const out: Record<number, TSchema> = { ...ok };
  for (const status of errors) out[status] = Type.Ref('Error');
  return out;
}

/** A handler name (job kind), a node key, a workflow name: short free text. */
export const Name = Type.String({ minLength: 1, maxLength: 200 });

/** A page size: how many items a list returns at most. */
export const PageLimit = Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'page size' });

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
