/** `--metrics-port N` and `--metrics-host H` of the long-running roles. */
import { serveMetrics, type MetricsServer, type MetricsServerOptions } from '../api/metrics-server.ts';
import { UsageError } from './usage-error.ts';

/** A TCP port, 0 for a free one. */
export function portFlag(value: string | undefined, flag = 'metrics-port'): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65_535) {
    throw new UsageError(`--${flag}: must be a port number from 0 to 65535, got '${value}'`);
  }
  return n;
}

/** Serves a role's /metrics, /healthz and /readyz when --metrics-port was given, printing where. */
export async function metricsServeFlagged(
  port: number | undefined,
  host: string | undefined,
  connectionString: string,
  roles: Pick<MetricsServerOptions, 'scheduler' | 'worker' | 'maintenance'>,
): Promise<MetricsServer | undefined> {
  if (port === undefined) return undefined;
  const metrics = await serveMetrics({ port, host, connectionString, ...roles });
  process.stdout.write(`metrics on ${metrics.url}\n`);
  return metrics;
}
