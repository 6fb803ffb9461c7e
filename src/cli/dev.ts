/**
 * `tidemark dev`: the whole system in one process. Without DATABASE_URL it starts an embedded
 * PostgreSQL under ./.tidemark/ (or --data-dir); with it, it uses that server and starts nothing.
 * Then it migrates and runs every role. Ctrl-C / SIGTERM stops the roles, then PostgreSQL.
 */
import { parseArgs } from 'node:util';
import { DEFAULT_EMBEDDED_PORT, startEmbedded, type EmbeddedServer } from '../store/embedded.ts';
import { migrate } from '../store/migrate.ts';
import { createRolePool, type Pool } from '../store/pool.ts';
import { createLogger, type Logger } from '../log.ts';
import type { Command } from './main.ts';
import { PUSH_QUEUE } from '../push/target.ts';
import { UsageError } from './usage-error.ts';

const HELP = `usage: tidemark dev [--data-dir DIR] [--port N] [--handlers MODULE [--queue NAME[:N]]...] [--retention FILE]

Runs Tidemark in one process. Without DATABASE_URL, starts an embedded PostgreSQL with its data in
--data-dir (default ./.tidemark) on --port (default ${DEFAULT_EMBEDDED_PORT}, or a free port when taken).
With --handlers, also runs a worker for MODULE's job kinds on the --queue queues (default 'default');
without it no worker runs and jobs stay queued for a 'tidemark worker' elsewhere.
The maintenance role prunes finished history after the retention periods in --retention FILE
(JSON; default: succeeded 7 days, dead and cancelled 30 days, occurrences 30 days).
`;

/** Something `dev` runs alongside the database; each later role (scheduler, worker, API) is one. */
export interface Role {
  name: string;
  stop(): Promise<void>;
}

export const command: Command = {
  summary: 'run Tidemark in one process, on an embedded PostgreSQL unless DATABASE_URL is set',
  async run(args) {
    const { values } = parseArgs({
      args,
      options: {
        'data-dir': { type: 'string', default: '.tidemark' },
        port: { type: 'string' },
        // The worker role runs only with --handlers: without a handlers module it could only fail jobs.
        handlers: { type: 'string' },
        queue: { type: 'string', multiple: true },
        retention: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
    if (values.help === true) {
      process.stdout.write(HELP);
      return 0;
    }
    const port = values.port === undefined ? undefined : Number(values.port);
    if (port !== undefined && !(Number.isInteger(port) && port > 0 && port < 65536)) {
      throw new UsageError(`--port: ${values.port} is not a port number (1-65535)`);
    }
    // A second worker on the push queue, without the push handler, would dead-letter the push jobs
    // it claimed.
    const pushQueue = values.queue?.find((q) => q.split(':')[0] === PUSH_QUEUE);
    if (pushQueue !== undefined) {
      throw new UsageError(
        `--queue ${pushQueue}: '${PUSH_QUEUE}' is the push queue, run by dev's own push worker; put handlers on another queue`,
      );
    }
    const log = createLogger('dev');

    let embedded: EmbeddedServer | undefined;
    let url = process.env.DATABASE_URL;
    if (url === undefined || url === '') {
      embedded = await startEmbedded({
        dataDir: values['data-dir'],
        port,
        log: (line) => log.debug({ postgres: line }),
      });
      url = embedded.url;
    }
    const pool = createRolePool({ connectionString: url, applicationName: 'tidemark-dev' });
    const roles: Role[] = [];
    const stopAll = async (): Promise<void> => {
      for (const role of roles.reverse()) await role.stop();
      await pool.end();
      await embedded?.stop();
    };
    try {
      const { applied } = await migrate(pool);
      log.info({ applied: applied.map((m) => m.file) }, 'migrations up to date');
      await startRoles(roles, {
        pool,
        url,
        log,
        dataDir: values['data-dir'],
        handlers: values.handlers,
        queue: values.queue,
        retention: values.retention,
      });
    } catch (error) {
      // A role that fails to start must not leave the others, or the embedded server, running.
      await stopAll();
      throw error;
    }

    process.stdout.write(
      `Tidemark dev is running${embedded === undefined ? '' : ` (embedded PostgreSQL in ${values['data-dir']})`}\n` +
        `DATABASE_URL=${url}\n`,
    );
    const signal = await new Promise<NodeJS.Signals>((done) => {
      process.once('SIGINT', done);
      process.once('SIGTERM', done);
    });
    log.info({ signal }, 'stopping');
    await stopAll();
    process.stdout.write('Tidemark dev stopped\n');
    return 0;
  },
};

interface RoleOptions {
  pool: Pool;
  url: string;
  log: Logger;
  dataDir: string;
  handlers: string | undefined;
  queue: string[] | undefined;
  retention: string | undefined;
}

/** Starts every role into `roles` as it comes up, so a failure part-way can stop those already running. */
async function startRoles(roles: Role[], options: RoleOptions): Promise<void> {
  const { pool, url, log } = options;
  const { exportMaintenanceMetrics, exportSchedulerMetrics, exportWorkerMetrics } =
    await import('../api/process-metrics.ts');
  // Checked first: a bad retention file stops dev before any role starts.
  const { createMaintenance } = await import('./maintenance-role.ts');
  const maintenance = await createMaintenance(pool, log.child({ role: 'maintenance' }), options.retention);
  roles.push(
    await (await import('../api/role.ts')).startDevApi({ pool, dataDir: options.dataDir, logger: log }),
  );
  // URL-targeted jobs (the quick start's webhook schedule): the push preset, a worker of its own.
  // Its maintenance also applies workflow signal timeouts, so dev needs no timer for those.
  const { startPushWorker } = await import('./push.ts');
  const push = await startPushWorker({}, pool, url, log.child({ role: 'push' }));
  const withdrawPush = exportWorkerMetrics(push);
  roles.push({
    name: 'push',
    stop: async () => {
      withdrawPush();
      await push.stop();
    },
  });
  if (options.handlers !== undefined) {
    const { startWorkerRole } = await import('./worker.ts');
    const role = await startWorkerRole({ handlers: options.handlers, queue: options.queue }, pool, url);
    const withdraw = exportWorkerMetrics(role.worker);
    roles.push({
      name: 'worker',
      stop: async () => {
        withdraw();
        await role.stop();
      },
    });
  }
  // No supervisor in dev: a lost lease ends that term and a fresh instance contends as a standby.
  const { RestartingScheduler } = await import('../scheduler/restarting.ts');
  const scheduler = new RestartingScheduler({
    pool,
    log: log.child({ role: 'scheduler' }),
    onLost: (reason) => log.error({ reason }, 'scheduler term ended: it lost its lease'),
  });
  await scheduler.start();
  const withdraw = exportSchedulerMetrics(scheduler.metrics);
  roles.push({
    name: 'scheduler',
    stop: async () => {
      withdraw();
      await scheduler.stop();
    },
  });
  maintenance.start();
  const withdrawMaintenance = exportMaintenanceMetrics(maintenance.metrics);
  roles.push({
    name: 'maintenance',
    stop: async () => {
      withdrawMaintenance();
      await maintenance.stop();
    },
  });
}
