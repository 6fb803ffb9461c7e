/**
 * Who a token is: its id and tenant, or admin. Any token may ask, so a client (the dashboard) tells
 * a tenant token from an admin one without probing an admin route and logging its 403.
 */
import { Type } from '@sinclair/typebox';
import type { Api } from '../app.ts';
import { principalOf } from '../auth.ts';
import { withErrors } from '../schemas.ts';

export function whoamiRoutes(app: Api): void {
  app.get(
    '/v1/whoami',
    {
      schema: {
        operationId: 'whoami',
        summary: 'The calling token: its id, and its tenant (null for an admin token)',
        tags: ['tokens'],
        response: withErrors(
          {
            200: Type.Object({
              tokenId: Type.String(),
              tenantId: Type.Union([Type.String(), Type.Null()]),
              admin: Type.Boolean(),
            }),
          },
          [401, 429],
        ),
      },
    },
    (request) => {
      const { tokenId, tenantId } = principalOf(request);
      return Promise.resolve({ tokenId, tenantId, admin: tenantId === null });
    },
  );
}
