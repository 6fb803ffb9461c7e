/**
 * `tidemark scheduler`: one scheduler replica. Run as many as you like against one DATABASE_URL;
 * one leads, the others stand by. Losing the lease is fatal by design (exit 1 with the reason): a
 * scheduler that cannot prove it leads must not write, and its supervisor restarts it as a standby.
 * SIGTERM/SIGINT stop it gracefully and release the lease so a standby takes over at once.
 */
import { parseArgs } from 'node:util';
import { createLogger } from '../log.ts';
import { DueIndexKind } from '../scheduler/due-index.ts';
import type { Maintenance } from '../maintenance/maintenance.ts';
import { Scheduler, SCHEDULER_DEFAULTS } from '../scheduler/scheduler.ts';
import { TimeSourceKind } from '../scheduler/time-source.ts';
import { schemaCheck } from '../store/migrate.ts';
import { createRolePool } from '../store/pool.ts';
import { metricsServeFlagged, portFlag } from './port-flag.ts';
import { requireDatabaseUrl } from './database-url.ts';
import { createMaintenance } from './maintenance-role.ts';
import type { Command } from './main.ts';
import { UsageError } from './usage-error.ts';

const HELP = `usage: tidemark scheduler [options]

Runs a scheduler replica against DATABASE_URL. One replica holds the lease and materialises
occurrences; the others stand by and take over when it expires or is released. It does not
migrate: against a database whose schema is not this build's it says so and exits 1 (run
'tidemark migrate' first).

options:
  --lease-ttl DURATION     lease time to live (default ${SCHEDULER_DEFAULTS.leaseTtlMs / 1000}s)
  --renew-every DURATION   lease renewal interval, shorter than the TTL (default ${SCHEDULER_DEFAULTS.renewEveryMs / 1000}s)
  --tick DURATION          how often the leader looks for due schedules (default ${SCHEDULER_DEFAULTS.tickMs / 1000}s)
  --plan-ahead DURATION    plan schedules due this soon before their fire time, so a burst is only
                           written at it (heap index; default ${SCHEDULER_DEFAULTS.planAheadMs / 1000}s, 0 turns it off)
  --due-index KIND         heap | wheel | db (default ${SCHEDULER_DEFAULTS.dueIndex})
  --time-source KIND       db (the database's clock, default) | host (this process's wall clock)
  --batch-size N           occurrences per write (default ${SCHEDULER_DEFAULTS.batchSize})
  --writers N              writes a tick runs at once during a burst (default ${SCHEDULER_DEFAULTS.writers})
  --holder NAME            this replica's name in the lease (default host:pid:random)
  --unsafe-no-election     every replica materialises, without a lease; only to prove that the
                           unique key alone prevents duplicate occurrences
  --retention FILE         retention settings (JSON; docs/production.md). Every scheduler replica
                           also runs the maintenance role: the one holding its lease prunes history
  --no-maintenance         do not run the maintenance role in this replica
  --metrics-port N         serve /metrics (this replica's scheduler and maintenance metrics),
                           /healthz and /readyz (database reachable, schema current, roles
                           running; 503 otherwise) on port N (0: a free one, printed at start)
  --metrics-host H         the metrics port's address (default 127.0.0.1; 0.0.0.0 for every interface)

DURATION is a number with ms, s or m (e.g. 500ms, 2s); a bare number is milliseconds.
`;

function duration(flag: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text.trim());
  if (match === null) throw new UsageError(`--${flag}: '${text}' is not a duration (e.g. 500ms, 2s, 1m)`);
  const unit = match[2] === 's' ? 1000 : match[2] === 'm' ? 60_000 : 1;
  const ms = Number(match[1]) * unit;
  if (!(ms >= 1)) throw new UsageError(`--${flag}: must be at least 1 ms`);
  return ms;
}

function oneOf<T extends string>(
  flag: string,
  text: string | undefined,
  allowed: Record<string, T>,
  fallback: T,
): T {
  if (text === undefined) return fallback;
  const value = allowed[text];
  if (value === undefined)
    throw new UsageError(`--${flag}: '${text}' is not one of ${Object.keys(allowed).join(', ')}`);
  return value;
}

export const command: Command = {
  summary: 'run a scheduler replica (leader election, due index, occurrence materialisation)',
  async run(args) {
    const { values } = parseArgs({
      args,
      options: {
        'lease-ttl': { type: 'string' },
        'renew-every': { type: 'string' },
        tick: { type: 'string' },
        'plan-ahead': { type: 'string' },
        'due-index': { type: 'string' },
        'time-source': { type: 'string' },
        'batch-size': { type: 'string' },
        writers: { type: 'string' },
        holder: { type: 'string' },
        'unsafe-no-election': { type: 'boolean', default: false },
        retention: { type: 'string' },
        'no-maintenance': { type: 'boolean', default: false },
        'metrics-port': { type: 'string' },
        'metrics-host': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
    if (values.help === true) {
      process.stdout.write(HELP);
      return 0;
    }
    const leaseTtlMs = duration('lease-ttl', values['lease-ttl'], SCHEDULER_DEFAULTS.leaseTtlMs);
    const renewEveryMs = duration('renew-every', values['renew-every'], SCHEDULER_DEFAULTS.renewEveryMs);
    if (renewEveryMs >= leaseTtlMs) {
      throw new UsageError(
        `--renew-every: ${renewEveryMs} ms must be shorter than --lease-ttl (${leaseTtlMs} ms)`,
      );
    }
    const tickMs = duration('tick', values.tick, SCHEDULER_DEFAULTS.tickMs);
    const planAheadMs =
      values['plan-ahead']?.trim() === '0'
        ? 0
        : duration('plan-ahead', values['plan-ahead'], SCHEDULER_DEFAULTS.planAheadMs);
    const dueIndex = oneOf('due-index', values['due-index'], DueIndexKind, SCHEDULER_DEFAULTS.dueIndex);
    const timeSource = oneOf(
      'time-source',
      values['time-source'],
      TimeSourceKind,
      SCHEDULER_DEFAULTS.timeSource,
    );
    const batchSize =
      values['batch-size'] === undefined ? SCHEDULER_DEFAULTS.batchSize : Number(values['batch-size']);
    if (!(Number.isInteger(batchSize) && batchSize >= 1)) {
      throw new UsageError(`--batch-size: '${values['batch-size']}' is not a positive integer`);
    }
    const writers = values.writers === undefined ? SCHEDULER_DEFAULTS.writers : Number(values.writers);
    if (!(Number.isInteger(writers) && writers >= 1)) {
      throw new UsageError(`--writers: '${values.writers}' is not a positive integer`);
    }
    const metricsPort = portFlag(values['metrics-port']);
    const url = requireDatabaseUrl();
    const log = createLogger('scheduler');
    const pool = createRolePool({ connectionString: url, applicationName: 'tidemark-scheduler' });
    let maintenance: Maintenance | null = null;
    try {
      await schemaCheck(pool);
      if (values['no-maintenance'] !== true) {
        maintenance = await createMaintenance(pool, log.child({ role: 'maintenance' }), values.retention);
      }
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw error;
    }

    let lost: string | null = null;
    let wakeMain: () => void = () => undefined;
    const scheduler = new Scheduler({
      pool,
      log,
      holder: values.holder,
      leaseTtlMs,
      renewEveryMs,
      tickMs,
      planAheadMs,
      dueIndex,
      timeSource,
      batchSize,
      writers,
      election: values['unsafe-no-election'] !== true,
      onLead: (epoch) =>
        process.stdout.write(`scheduler ${scheduler.holder} leading epoch=${epoch ?? 'none'}\n`),
      onLost: (reason) => {
        lost = reason;
        wakeMain();
      },
    });
    await scheduler.start();
    maintenance?.start();
    const metrics = await metricsServeFlagged(metricsPort, values['metrics-host'], url, {
      scheduler,
      ...(maintenance === null ? {} : { maintenance }),
    });
    process.stdout.write(
      `scheduler ${scheduler.holder} started (${scheduler.isLeader ? 'leader' : 'standby'})\n`,
    );
    const signal = await new Promise<NodeJS.Signals | null>((done) => {
      wakeMain = () => done(null);
      process.once('SIGINT', done);
      process.once('SIGTERM', done);
    });
    const m = scheduler.metrics;
    if (signal === null) {
      process.stdout.write(`scheduler ${scheduler.holder} lost leadership: ${lost ?? 'unknown'}\n`);
      // Exit now, without waiting for the pool: its connections may be the very ones that are cut,
      // and nothing this process could still do is safe to do.
      process.exit(1);
    }
    log.info({ signal }, 'stopping');
    await metrics?.close();
    await maintenance?.stop();
    await scheduler.stop();
    await pool.end();
    process.stdout.write(
      `scheduler ${scheduler.holder} stopped occurrences=${m.occurrences} conflicts=${m.conflicts} ticks=${m.ticks}\n`,
    );
    return 0;
  },
};
