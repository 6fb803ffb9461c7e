/**
 * `tidemark token create|ls|revoke`: API tokens, over the HTTP API with an admin token, or directly
 * on DATABASE_URL when no API address is given (how a deployment makes its first admin token).
 */
import { adminBackend, ADMIN_NOTE, type AdminBackend } from './admin-backend.ts';
import { parseIntOption, requireArg } from './api-client.ts';
import { print, table } from './output.ts';
import { str, subcommands } from './subcommands.ts';
import { UsageError } from '../usage-error.ts';

export const command = subcommands(
  'token',
  'create, list and revoke API tokens (admin; on DATABASE_URL for bootstrap)',
  {
    create: {
      usage: 'create (--admin | --tenant T) [--name N] [--rate N]',
      options: {
        admin: { type: 'boolean' },
        tenant: { type: 'string' },
        name: { type: 'string' },
        rate: { type: 'string' },
      },
      async run(admin: AdminBackend, _args, v) {
        const tenant = str(v, 'tenant');
        if (v.admin === true && tenant !== undefined)
          throw new UsageError('--admin and --tenant: give one of them');
        const t = await admin.tokenCreate({
          tenantId: tenant ?? null,
          name: str(v, 'name') ?? (tenant === undefined ? 'admin' : `${tenant} token`),
          ratePerS: parseIntOption('rate', str(v, 'rate')) ?? null,
        });
        print(v.json === true, t, () => `${t.token ?? ''}\n`);
        process.stderr.write(
          `token ${t.id} for ${t.tenantId ?? 'all tenants (admin)'}, made through ${admin.where}: shown once, store it now\n`,
        );
        return 0;
      },
    },
    ls: {
      usage: 'ls [--tenant T]',
      options: { tenant: { type: 'string' } },
      async run(admin: AdminBackend, _args, v) {
        const items = await admin.tokenList(str(v, 'tenant'));
        print(v.json === true, { items }, () =>
          table(
            ['id', 'tenant', 'name', 'rate/s', 'created'],
            items.map((t) => [t.id, t.tenantId ?? '(admin)', t.name, t.ratePerS, t.createdAt]),
          ),
        );
        return 0;
      },
    },
    revoke: {
      usage: 'revoke <id>',
      async run(admin: AdminBackend, args, v) {
        const t = await admin.tokenRevoke(requireArg(args, 0, 'token id'));
        print(v.json === true, t, () => `revoked ${t.id}\n`);
        return 0;
      },
    },
  },
  { open: adminBackend, close: (admin) => admin.close(), note: ADMIN_NOTE },
);
