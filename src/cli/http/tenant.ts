/** `tidemark tenant create|ls`: tenants and their quotas, over the API or directly on DATABASE_URL. */
import { adminBackend, ADMIN_NOTE, type AdminBackend } from './admin-backend.ts';
import { parseIntOption, requireArg } from './api-client.ts';
import { print, table } from './output.ts';
import { str, subcommands } from './subcommands.ts';

export const command = subcommands(
  'tenant',
  'create and list tenants (admin; on DATABASE_URL for bootstrap)',
  {
    create: {
      usage: 'create <id> [--name N] [--max-running N]   (an existing tenant gets the new name and quota)',
      options: { name: { type: 'string' }, 'max-running': { type: 'string' } },
      async run(admin: AdminBackend, args, v) {
        const id = requireArg(args, 0, 'tenant id');
        const maxRunning = parseIntOption('max-running', str(v, 'max-running')) ?? null;
        const t = await admin.tenantPut(id, str(v, 'name') ?? id, maxRunning);
        print(v.json === true, t, () => `tenant ${t.id} (${t.name}), quota ${t.maxRunning ?? 'none'}\n`);
        return 0;
      },
    },
    ls: {
      usage: 'ls',
      async run(admin: AdminBackend, _args, v) {
        const items = await admin.tenantList();
        print(v.json === true, { items }, () =>
          table(
            ['id', 'name', 'max running', 'created'],
            items.map((t) => [t.id, t.name, t.maxRunning ?? '-', t.createdAt]),
          ),
        );
        return 0;
      },
    },
  },
  { open: adminBackend, close: (admin) => admin.close(), note: ADMIN_NOTE },
);
