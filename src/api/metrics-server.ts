/**
 * A role's own metrics port: `/metrics` (Prometheus text of the roles given, plus anything on
 * prom-client's default registry), `/healthz` (the process answers) and `/readyz` (the database
 * answers with this build's schema and every role given is running; 503 otherwise), on a small
 * node:http server. What `--metrics-port` of `tidemark scheduler` and `tidemark worker` starts; the
 * API server answers the same three paths on its own port.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry, register as defaultRegistry } from 'prom-client';
import type { Maintenance } from '../maintenance/maintenance.ts';
import type { Scheduler } from '../scheduler/scheduler.ts';
import { createRolePool, type Pool } from '../store/pool.ts';
import type { Worker } from '../worker/worker.ts';
import { registerProcessMetrics } from './process-metrics.ts';
import { readinessCheck } from './readiness.ts';
import { ConfigError } from '../errors.ts';

export interface MetricsServerOptions {
  /** 0: a free port (see `port` on the result). */
  port: number;
  /** Default 127.0.0.1; 0.0.0.0 for every interface (a scraper on another host). */
  host?: string;
  /** For /readyz. Without it, a pool of one connection on `connectionString`, ended on close. */
  pool?: Pool;
  connectionString?: string;
  scheduler?: Scheduler;
  worker?: Worker;
  maintenance?: Maintenance;
}

export interface MetricsServer {
  readonly port: number;
  readonly url: string;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Starts the server; resolves once it listens. */
export async function serveMetrics(options: MetricsServerOptions): Promise<MetricsServer> {
  const { scheduler, worker, maintenance } = options;
  if (scheduler === undefined && worker === undefined && maintenance === undefined) {
    throw new ConfigError('serveMetrics: give at least one of scheduler, worker, maintenance');
  }
  if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65_535) {
    throw new RangeError(`port: must be an integer from 0 to 65535, got ${options.port}`);
  }
  let pool = options.pool;
  const ownsPool = pool === undefined;
  if (pool === undefined) {
    if (options.connectionString === undefined)
      throw new ConfigError('serveMetrics: pool or connectionString required');
    pool = createRolePool({
      connectionString: options.connectionString,
      max: 1,
      applicationName: 'tidemark-metrics',
    });
  }
  const registry = new Registry();
  registerProcessMetrics(registry, {
    ...(scheduler === undefined ? {} : { schedulers: () => [scheduler.metrics.snapshot()] }),
    ...(worker === undefined ? {} : { queues: () => worker.metrics() }),
    ...(maintenance === undefined ? {} : { maintenances: () => [maintenance.metrics.snapshot()] }),
  });
  const ready = readinessCheck(pool);
  const stopped = (): string | undefined => {
    if (scheduler !== undefined && scheduler.metrics.snapshot().role === 'stopped')
      return 'scheduler stopped';
    if (worker !== undefined && !worker.isRunning) return 'worker not running';
    if (maintenance !== undefined && maintenance.metrics.snapshot().role === 'stopped')
      return 'maintenance stopped';
    return undefined;
  };

  const json = (res: ServerResponse, status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0];
    switch (req.method === 'GET' || req.method === 'HEAD' ? path : undefined) {
      case '/healthz':
        json(res, 200, { status: 'ok' });
        return;
      case '/readyz': {
        const role = stopped();
        if (role !== undefined) {
          json(res, 503, { status: 'unavailable', reason: role });
          return;
        }
        const r = await ready();
        if (r.ready) json(res, 200, { status: 'ready', schemaVersion: r.schemaVersion });
        else json(res, 503, { status: 'unavailable', reason: r.reason });
        return;
      }
      case '/metrics': {
        const own = await registry.metrics();
        const others = await defaultRegistry.metrics();
        res
          .writeHead(200, { 'content-type': registry.contentType })
          .end(others === '' ? own : `${own}\n${others}`);
        return;
      }
      default:
        json(res, 404, {
          error: {
            code: 'not_found',
            message: `${req.method ?? ''} ${path ?? ''}: this port serves GET /metrics, /healthz and /readyz`,
          },
        });
    }
  };
  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) json(res, 500, { error: { code: 'internal', message: String(error) } });
      else res.destroy();
    });
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const close = async (): Promise<void> => {
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
    if (ownsPool) await pool.end();
  };
  return {
    port,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    close,
    [Symbol.asyncDispose]: close,
  };
}
