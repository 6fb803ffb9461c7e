/**
 * `tidemark worker --handlers <module>`: runs the handlers module's job kinds on the queues given
 * (flags or --config). SIGTERM/SIGINT stops claiming, lets running handlers finish within the
 * shutdown grace period, then hands what is left back to the queue.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { createLogger } from '../log.ts';
import { schemaCheck } from '../store/migrate.ts';
import { createRolePool, type Pool } from '../store/pool.ts';
import { ConfigError } from '../errors.ts';
import { applyQueueFlags, parseConfigFile, type WorkerConfig } from '../worker/config.ts';
import { queueSettingsApply } from '../worker/queue-client.ts';
import { QueueInputError } from '../worker/queue-settings.ts';
import { Worker } from '../worker/worker.ts';
import { requireDatabaseUrl } from './database-url.ts';
import { metricsServeFlagged, portFlag } from './port-flag.ts';
import { handlersLoad } from './handlers-module.ts';
import type { Command } from './main.ts';
import { UsageError } from './usage-error.ts';

const HELP = `usage: tidemark worker --handlers MODULE [--queue NAME[:CONCURRENCY]]... [--config FILE]
                       [--lease-ms N] [--poll-ms N] [--timeout-grace-ms N] [--shutdown-grace-ms N]
                       [--batch N] [--id ID] [--no-maintenance] [--registry-heartbeat-ms N]
                       [--metrics-port N] [--metrics-host H]

Runs jobs from the database at DATABASE_URL. MODULE's default export maps job kinds to handlers,
async (ctx) => result; MODULE is .js, .mjs or .cjs, or .ts, .mts or .cts (run by Node 22.18+
itself, or by tsx installed in the module's project). Each --queue gets its own claim loop with
CONCURRENCY slots (default 10); with no --queue and no --config, the queue 'default' is run.
It does not migrate: against a database whose schema is not this build's it says so and exits 1
(run 'tidemark migrate' first).

--config FILE (JSON): this process's settings, and per queue its local concurrency and claimAhead
and its cluster-wide settings, written to the queues table at start for every worker (recorded in
the queue's changes as made by this worker; the same shape as client.queues.update and
PATCH /v1/queues/NAME take). Every field is optional; unknown fields are refused.
  { "leaseMs": 30000,             lease of a job without its own heartbeat interval
    "pollMs": 1000,               polling fallback and maintenance interval
    "timeoutGraceMs": 5000,       how long a handler may run on after its deadline or cancel
    "shutdownGraceMs": 10000,     how long SIGTERM waits for running handlers
    "batchSize": 1000,            most jobs per claim and per completion statement
    "registryHeartbeatMs": 5000,  worker registry heartbeat; 3 missed: shown lost
    "queues": { "emails": {
      "concurrency": 10,          handlers at once in this process
      "claimAhead": 1000,         jobs claimed ahead of free slots; 0: off
      "maxRunning": null,         cluster-wide cap on running jobs; null: none
      "maxAttempts": 4,           attempts before the dead letter
      "backoffBaseMs": 1000,      first retry delay; doubles each attempt, with jitter
      "backoffMaxMs": 3600000,    longest retry delay, at least backoffBaseMs
      "timeoutMs": null } } }     deadline per attempt unless the job sets one; null: none
The values shown are the defaults. Flags override the file.

--metrics-port N serves /metrics (this worker's claim latency, start lag, running and outcomes per
queue), /healthz and /readyz (database reachable, schema current, worker running; 503 otherwise)
on port N (0: a free one; the address is printed at start) of --metrics-host (default 127.0.0.1;
0.0.0.0 for every interface).
`;

export interface WorkerRole {
  worker: Worker;
  stop(): Promise<void>;
}

export const workerFlags = {
  handlers: { type: 'string' },
  queue: { type: 'string', multiple: true },
  config: { type: 'string' },
  'lease-ms': { type: 'string' },
  'poll-ms': { type: 'string' },
  'timeout-grace-ms': { type: 'string' },
  'shutdown-grace-ms': { type: 'string' },
  batch: { type: 'string' },
  id: { type: 'string' },
  'no-maintenance': { type: 'boolean' },
  'registry-heartbeat-ms': { type: 'string' },
} as const;

export type WorkerFlagValues = {
  handlers?: string;
  queue?: string[];
  config?: string;
  'lease-ms'?: string;
  'poll-ms'?: string;
  'timeout-grace-ms'?: string;
  'shutdown-grace-ms'?: string;
  batch?: string;
  id?: string;
  'no-maintenance'?: boolean;
  'registry-heartbeat-ms'?: string;
};

function intFlag(value: string | undefined, name: string, min: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min)
    throw new UsageError(`--${name}: must be an integer ≥ ${min}, got '${value}'`);
  return n;
}

/** Starts a worker from parsed flags on `pool`; used by `tidemark worker` and `tidemark dev`. */
export async function startWorkerRole(
  values: WorkerFlagValues,
  pool: Pool,
  url: string,
): Promise<WorkerRole> {
  if (values.handlers === undefined)
    throw new UsageError('--handlers: required (a module whose default export maps job kinds to handlers)');
  let config: WorkerConfig = { queues: [] };
  try {
    if (values.config !== undefined) {
      let raw: unknown;
      try {
        raw = JSON.parse(await readFile(values.config, 'utf8'));
      } catch (error) {
        throw new ConfigError(
          `--config: can not read ${values.config} as JSON: ${error instanceof Error ? error.message : String(error)}`,
          {
            cause: error,
          },
        );
      }
      config = parseConfigFile(raw);
    }
    config = applyQueueFlags(config, values.queue ?? (config.queues.length === 0 ? ['default'] : []));
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(error.message, { cause: error });
    throw error;
  }
  await schemaCheck(pool);
  const handlers = await handlersLoad(values.handlers);
  const worker = new Worker({
    pool,
    connectionString: url,
    handlers,
    queues: config.queues.map((q) => ({
      name: q.name,
      concurrency: q.concurrency,
      claimAhead: q.claimAhead,
    })),
    id: values.id,
    log: createLogger('worker'),
    leaseMs: intFlag(values['lease-ms'], 'lease-ms', 1) ?? config.leaseMs,
    pollMs: intFlag(values['poll-ms'], 'poll-ms', 1) ?? config.pollMs,
    timeoutGraceMs: intFlag(values['timeout-grace-ms'], 'timeout-grace-ms', 0) ?? config.timeoutGraceMs,
    shutdownGraceMs: intFlag(values['shutdown-grace-ms'], 'shutdown-grace-ms', 0) ?? config.shutdownGraceMs,
    batchSize: intFlag(values.batch, 'batch', 1) ?? config.batchSize,
    maintenance: values['no-maintenance'] !== true,
    registryHeartbeatMs:
      intFlag(values['registry-heartbeat-ms'], 'registry-heartbeat-ms', 1) ?? config.registryHeartbeatMs,
  });
  for (const q of config.queues) {
    if (Object.keys(q.settings).length === 0) continue;
    try {
      await queueSettingsApply(pool, q.name, q.settings, `worker ${worker.id}`);
    } catch (error) {
      if (!(error instanceof QueueInputError)) throw error;
      const field = error.field.replace(/^settings\./, '');
      throw new UsageError(`config.queues.${q.name}.${field}: ${error.reason}`, { cause: error });
    }
  }
  await worker.start();
  return { worker, stop: () => worker.stop() };
}

export const command: Command = {
  summary: 'run jobs: claim loops per queue for a handlers module',
  async run(args) {
    const { values } = parseArgs({
      args,
      options: {
        ...workerFlags,
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
    const pool = createRolePool({ connectionString: url, max: 10, applicationName: 'tidemark-worker' });
    let role: WorkerRole;
    try {
      role = await startWorkerRole(values, pool, url);
    } catch (error) {
      await pool.end();
      throw error;
    }
    // Its own connection: a /readyz waiting on an unreachable database never holds one the worker needs.
    const metrics = await metricsServeFlagged(metricsPort, values['metrics-host'], url, {
      worker: role.worker,
    });
    const queues = role.worker.metrics().map((m) => `${m.queue}(${m.concurrency})`);
    process.stdout.write(`worker ${role.worker.id} ready: ${queues.join(' ')}\n`);
    const signal = await new Promise<NodeJS.Signals>((done) => {
      process.once('SIGINT', done);
      process.once('SIGTERM', done);
    });
    process.stdout.write(`worker stopping (${signal})\n`);
    await role.stop();
    await metrics?.close();
    // A handlers module may hold its own handles (a pg pool's idle clients linger 10 s), and with the
    // database unreachable pool.end() waits on statements that never return: once every job is
    // settled (and written, or logged as not), neither may keep a stopped worker alive. unref'd: a
    // process that exits by itself first is not held either.
    setTimeout(() => process.exit(process.exitCode ?? 0), 1000).unref();
    await pool.end();
    process.stdout.write('worker stopped\n');
    return 0;
  },
};
