/** `tidemark push`: the HTTP push executor against DATABASE_URL until SIGINT/SIGTERM. */
import { parseArgs } from 'node:util';
import { createLogger } from '../log.ts';
import { PushExecutor } from '../push/executor.ts';
import { PUSH_QUEUE } from '../push/target.ts';
import { createPool } from '../store/pool.ts';
import { requireDatabaseUrl } from './database-url.ts';
import type { Command } from './main.ts';
import { UsageError } from './usage-error.ts';

const HELP = `usage: tidemark push [--queue Q]… [--per-host N] [--max-in-flight N] [--timeout-ms N] [--lease-ms N]

Delivers jobs that target a URL (POST with Idempotency-Key, Tidemark-Job-Id, Tidemark-Attempt and
Tidemark-Deadline headers) from the queues named (default: ${PUSH_QUEUE}) of the database at DATABASE_URL.
`;

function positive(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new UsageError(`--${name}: ${value} is not a positive integer`);
  return n;
}

export const command: Command = {
  summary: 'run the HTTP push executor (jobs that target a URL)',
  async run(args) {
    const { values } = parseArgs({
      args,
      options: {
        queue: { type: 'string', multiple: true },
        'per-host': { type: 'string' },
        'max-in-flight': { type: 'string' },
        'timeout-ms': { type: 'string' },
        'lease-ms': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
    if (values.help === true) {
      process.stdout.write(HELP);
      return 0;
    }
    const log = createLogger('push');
    const pool = createPool({ connectionString: requireDatabaseUrl(), applicationName: 'tidemark-push' });
    const executor = new PushExecutor({
      pool,
      log,
      queues: values.queue ?? [PUSH_QUEUE],
      perHostConcurrency: positive('per-host', values['per-host'], 8),
      maxInFlight: positive('max-in-flight', values['max-in-flight'], 64),
      requestTimeoutMs: positive('timeout-ms', values['timeout-ms'], 30_000),
      leaseMs: positive('lease-ms', values['lease-ms'], 30_000),
    });
    try {
      executor.start();
      process.stdout.write(`Tidemark push executor ${executor.id} running\n`);
      const signal = await new Promise<NodeJS.Signals>((done) => {
        process.once('SIGINT', done);
        process.once('SIGTERM', done);
      });
      log.info({ signal }, 'stopping');
      await executor.stop();
      return 0;
    } finally {
      await pool.end();
    }
  },
};
