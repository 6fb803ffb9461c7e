/**
 * `tidemark dev`: the whole system in one process. Without DATABASE_URL it starts an embedded
 * PostgreSQL under ./.tidemark/ (or --data-dir); with it, it uses that server and starts nothing.
 * Then it migrates and runs every role. Ctrl-C / SIGTERM stops the roles, then PostgreSQL.
 */
import { parseArgs } from 'node:util';
import { DEFAULT_EMBEDDED_PORT, startEmbedded, type EmbeddedServer } from '../store/embedded.ts';
import { migrate } from '../store/migrate.ts';
import { createPool } from '../store/pool.ts';
import { createLogger } from '../log.ts';
import type { Command } from './main.ts';
import { UsageError } from './usage-error.ts';

const HELP = `usage: tidemark dev [--data-dir DIR] [--port N] [--handlers MODULE [--queue NAME[:N]]...]

Runs Tidemark in one process. Without DATABASE_URL, starts an embedded PostgreSQL with its data in
--data-dir (default ./.tidemark) on --port (default ${DEFAULT_EMBEDDED_PORT}, or a free port when taken).
With --handlers, also runs a worker for MODULE's job kinds on the --queue queues (default 'default');
without it no worker runs and jobs stay queued for a 'tidemark worker' elsewhere.
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
    const pool = createPool({ connectionString: url, applicationName: 'tidemark-dev' });
    const roles: Role[] = [];
    const stopAll = async (): Promise<void> => {
      for (const role of roles.reverse()) await role.stop();
      await pool.end();
      await embedded?.stop();
    };
    try {
      const { applied } = await migrate(pool);
      log.info({ applied: applied.map((m) => m.file) }, 'migrations up to date');
    } catch (error) {
      await stopAll();
      throw error;
    }

    roles.push(await (await import('../api/role.ts')).startDevApi({ pool, dataDir: values['data-dir'], logger: log }));
    if (values.handlers !== undefined) {
      const { startWorkerRole } = await import('./worker.ts');
      roles.push({ name: 'worker', ...(await startWorkerRole({ handlers: values.handlers, queue: values.queue }, pool, url)) });
    }
    // No supervisor in dev: a lost lease ends that term and a fresh instance contends as a standby.
    const { RestartingScheduler } = await import('../scheduler/restarting.ts');
    const scheduler = new RestartingScheduler({
      pool,
      log: log.child({ role: 'scheduler' }),
      onLost: (reason) => log.error({ reason }, 'scheduler term ended: it lost its lease'),
    });
    await scheduler.start();
    roles.push({ name: 'scheduler', stop: () => scheduler.stop() });
    (await import('../api/process-metrics.ts')).exportSchedulerMetrics(scheduler.metrics);
    const { SignalTimer } = await import('../workflow/signal-timer.ts');
    const signalTimer = new SignalTimer({ pool, log });
    signalTimer.start();
    roles.push(signalTimer);
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
