/** `tidemark api`: the HTTP API against DATABASE_URL until SIGINT/SIGTERM. */
import { parseArgs } from 'node:util';
import { startApiRole } from '../api/role.ts';
import { createLogger } from '../log.ts';
import { schemaCheck } from '../store/migrate.ts';
import { createRolePool } from '../store/pool.ts';
import { requireDatabaseUrl } from './database-url.ts';
import type { Command } from './main.ts';
import { UsageError } from './usage-error.ts';

const HELP = `usage: tidemark api [--port N] [--host H] [--public-url URL]

Serves the HTTP API (see /openapi.json) for the database at DATABASE_URL, on --port (default 8787,
0 for a free one) and --host (default 127.0.0.1; 0.0.0.0 for every interface). --public-url is the
address clients use (behind a proxy), given as \`servers\` in /openapi.json; by default each request
of /openapi.json gets the address it came in on. It does not migrate: against a database whose
schema is not this build's it says so and exits 1 (run 'tidemark migrate' first); /readyz answers
503 if the schema falls behind while it runs.
`;

export const command: Command = {
  summary: 'serve the HTTP API (schedules, jobs, workflows, worker pull, admin, /metrics)',
  async run(args) {
    const { values } = parseArgs({
      args,
      options: {
        port: { type: 'string', default: '8787' },
        host: { type: 'string', default: '127.0.0.1' },
        'public-url': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
    if (values.help === true) {
      process.stdout.write(HELP);
      return 0;
    }
    const port = Number(values.port);
    if (!(Number.isInteger(port) && port >= 0 && port < 65536)) {
      throw new UsageError(`--port: ${values.port} is not a port number (0-65535)`);
    }
    const publicUrl = values['public-url'];
    if (publicUrl !== undefined && !/^https?:\/\/[^\s]+$/.test(publicUrl)) {
      throw new UsageError(`--public-url: ${publicUrl} is not an http(s) URL`);
    }
    const log = createLogger('api');
    const pool = createRolePool({ connectionString: requireDatabaseUrl(), applicationName: 'tidemark-api' });
    try {
      await schemaCheck(pool);
      const role = await startApiRole({ pool, port, host: values.host, logger: log, publicUrl });
      process.stdout.write(`Tidemark API listening on ${role.url}\n`);
      const signal = await new Promise<NodeJS.Signals>((done) => {
        process.once('SIGINT', done);
        process.once('SIGTERM', done);
      });
      log.info({ signal }, 'stopping');
      await role.stop();
      return 0;
    } finally {
      await pool.end();
    }
  },
};
