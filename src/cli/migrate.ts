import { parseArgs } from 'node:util';
import { migrate } from '../store/migrate.ts';
import { createPool } from '../store/pool.ts';
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
    const pool = createPool({ connectionString: requireDatabaseUrl(), max: 1 });
    try {
      const result = await migrate(pool);
      for (const m of result.applied) process.stdout.write(`applied ${m.file}\n`);
      process.stdout.write(
        `${result.applied.length} applied, ${result.alreadyApplied} already applied before this run\n`,
      );
      return 0;
    } finally {
      await pool.end();
    }
  },
};
