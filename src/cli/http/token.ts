/** `tidemark token create|revoke|ls` over the HTTP API (needs an admin token). */
import { parseIntOption, requireArg } from './api-client.ts';
import { print, table } from './output.ts';
import { str, subcommands } from './subcommands.ts';

interface Token {
  id: string;
  tenantId: string | null;
  name: string;
  ratePerS: number | null;
  createdAt: string;
  token?: string;
}

export const command = subcommands('token', 'create, list and revoke API tokens (admin)', {
  create: {
    usage: 'create [--tenant T] [--name N] [--rate N]   (no --tenant: an admin token)',
    options: { tenant: { type: 'string' }, name: { type: 'string' }, rate: { type: 'string' } },
    async run(api, _args, v) {
      const tenant = str(v, 'tenant');
      const t = await api.call<Token>('POST', '/v1/tokens', {
        tenantId: tenant ?? null,
        name: str(v, 'name') ?? (tenant === undefined ? 'admin' : `${tenant} token`),
        ratePerS: parseIntOption('rate', str(v, 'rate')),
      });
      print(v.json === true, t, () => `${t.token ?? ''}\n`);
      process.stderr.write(
        `token ${t.id} for ${t.tenantId ?? 'all tenants (admin)'}: shown once, store it now\n`,
      );
      return 0;
    },
  },
  ls: {
    usage: 'ls [--tenant T]',
    options: { tenant: { type: 'string' } },
    async run(api, _args, v) {
      const tenant = str(v, 'tenant');
      const page = await api.call<{ items: Token[] }>(
        'GET',
        `/v1/tokens${tenant === undefined ? '' : `?tenantId=${encodeURIComponent(tenant)}`}`,
      );
      print(v.json === true, page, () =>
        table(
          ['id', 'tenant', 'name', 'rate/s', 'created'],
          page.items.map((t) => [t.id, t.tenantId ?? '(admin)', t.name, t.ratePerS, t.createdAt]),
        ),
      );
      return 0;
    },
  },
  revoke: {
    usage: 'revoke <id>',
    async run(api, args, v) {
      const t = await api.call<Token>(
        'DELETE',
        `/v1/tokens/${encodeURIComponent(requireArg(args, 0, 'token id'))}`,
      );
      print(v.json === true, t, () => `revoked ${t.id}\n`);
      return 0;
    },
  },
});
