/**
 * `tidemark push`: a worker preset that runs push jobs (jobs that target a URL) until SIGINT/SIGTERM.
 * It is `new Worker` with `pushHandlers()`, the same call a program makes, so push jobs go through
 * the worker's claim loops, leases, LISTEN wake-ups and batched completion like any other job.
 */
import { parseArgs } from 'node:util';
import { createLogger, type Logger } from '../log.ts';
import { PUSH_DEFAULTS, pushHandlers } from '../push/handler.ts';
import { PUSH_QUEUE } from '../push/target.ts';
import { schemaCheck } from '../store/migrate.ts';
import { createRolePool, type Pool } from '../store/pool.ts';
import { Worker } from '../worker/worker.ts';
import { requireDatabaseUrl } from './database-url.ts';
import { metricsServeFlagged, portFlag } from './port-flag.ts';
import type { Command } from './main.ts';
import { UsageError } from './usage-error.ts';

/** Requests in flight per push queue in one process, unless --max-in-flight says otherwise. */
const DEFAULT_IN_FLIGHT = 64;

const HELP = `usage: tidemark push [--queue Q]… [--per-host N] [--max-in-flight N] [--timeout-ms N] [--lease-ms N]
                     [--shutdown-grace-ms N] [--metrics-port N] [--metrics-host H]

Runs a worker for jobs that target a URL (kind http.post) on the queues named (default: ${PUSH_QUEUE}) of
the database at DATABASE_URL: each is POSTed with Idempotency-Key, Tidemark-Job-Id, Tidemark-Attempt
and Tidemark-Deadline headers. 2xx succeeds; 408, 429, 5xx, network errors and timeouts are retried
(a longer Retry-After wins over the backoff); any other status goes to the dead letter.
  --max-in-flight N      requests in flight per queue (default ${DEFAULT_IN_FLIGHT})
  --per-host N           requests in flight to one host:port (default ${PUSH_DEFAULTS.perHostConcurrency})
  --timeout-ms N         longest a request may take, whatever the job's timeout (default ${PUSH_DEFAULTS.requestTimeoutMs})
  --lease-ms N           lease per claimed job, renewed every third of it (default 30000)
  --shutdown-grace-ms N  how long SIGTERM lets requests in flight finish before they are aborted
                         and handed back (default 10000)
  --metrics-port N       serve /metrics (this worker's metrics), /healthz and /readyz (503 while the
                         database is unreachable or the worker stopped) on port N (0: a free one)
  --metrics-host H       the metrics port's address (default 127.0.0.1; 0.0.0.0 for every interface)
`;

function positive(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new UsageError(`--${name}: ${value} is not a positive integer`);
  return n;
}

export interface PushFlagValues {
  queue?: string[];
  'per-host'?: string;
  'max-in-flight'?: string;
  'timeout-ms'?: string;
  'lease-ms'?: string;
  'shutdown-grace-ms'?: string;
}

/** Starts the push preset on `pool`; used by `tidemark push` and `tidemark dev`. */
export async function startPushWorker(
  values: PushFlagValues,
  pool: Pool,
  url: string,
  log: Logger,
): Promise<Worker> {
  const concurrency = positive('max-in-flight', values['max-in-flight']) ?? DEFAULT_IN_FLIGHT;
  const handlers = pushHandlers({
    perHostConcurrency: positive('per-host', values['per-host']),
    requestTimeoutMs: positive('timeout-ms', values['timeout-ms']),
  });
  const leaseMs = positive('lease-ms', values['lease-ms']);
  const shutdownGraceMs = positive('shutdown-grace-ms', values['shutdown-grace-ms']);
  await schemaCheck(pool);
  const worker = new Worker({
    pool,
    connectionString: url,
    handlers,
    queues: (values.queue ?? [PUSH_QUEUE]).map((name) => ({ name, concurrency })),
    leaseMs,
    shutdownGraceMs,
    log,
  });
  await worker.start();
  return worker;
}

export const command: Command = {
  summary: 'run a worker for jobs that target a URL (the push preset)',
  async run(args) {
    const { values } = parseArgs({
      args,
      options: {
        queue: { type: 'string', multiple: true },
        'per-host': { type: 'string' },
        'max-in-flight': { type: 'string' },
        'timeout-ms': { type: 'string' },
        'lease-ms': { type: 'string' },
        'shutdown-grace-ms': { type: 'string' },
        'metrics-port': { type: 'string' },
        'metrics-host': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
    if (values.help === true) {
      process.stdout.write(HELP);
      return 0;
    }
    const metricsPort = portFlag(values['metrics-port']);
    const url = requireDatabaseUrl();
    const log = createLogger('push');
    const pool = createRolePool({ connectionString: url, applicationName: 'tidemark-push' });
    try {
      const worker = await startPushWorker(values, pool, url, log);
      const metrics = await metricsServeFlagged(metricsPort, values['metrics-host'], url, { worker });
      const queues = worker.metrics().map((m) => `${m.queue}(${m.concurrency})`);
      process.stdout.write(`push worker ${worker.id} ready: ${queues.join(' ')}\n`);
      const signal = await new Promise<NodeJS.Signals>((done) => {
        process.once('SIGINT', done);
        process.once('SIGTERM', done);
      });
      log.info({ signal }, 'stopping');
      await worker.stop();
      await metrics?.close();
      // As `tidemark worker`: with the database unreachable, pool.end() waits on statements that never
      // return; once every attempt is settled (written, or logged as not), they may not keep a
      // stopped worker alive. unref'd: a process that exits by itself first is not held either.
      setTimeout(() => process.exit(process.exitCode ?? 0), 1000).unref();
      return 0;
    } finally {
      await pool.end();
    }
  },
};
