/** The API's own schemas: its one error shape. Input field schemas are shared, in src/contract/. */
import { Type, type TSchema } from '@sinclair/typebox';

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
