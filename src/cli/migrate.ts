import { parseArgs } from 'node:util';
import { migrate } from '../migrate.ts';
import type { Command } from './main.ts';
import { requireDatabaseUrl } from './database-url.ts';

export const command: Command = {
  summary: 'apply pending database migrations to DATABASE_URL',
  async run(args) {
    const { values } = parseArgs({ args, options: { help: { type: 'boolean', short: 'h' } } });
    if (values.help === true) {
      process.stdout.write(
        'usage: tidemark migrate\n\nApplies pending migrations to the database at DATABASE_URL.\n',
      );
      return 0;
    }
    const result = await migrate({ connectionString: requireDatabaseUrl() });
    for (const file of result.applied) process.stdout.write(`applied ${file}\n`);
    process.stdout.write(
      `${result.applied.length} applied, ${result.alreadyApplied} already applied before this run\n`,
    );
    return 0;
  },
};
