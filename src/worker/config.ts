/**
 * Worker configuration from a JSON file and flags. Local settings (concurrency, claimAhead,
 * intervals) belong to one process; the queue's cluster-wide settings (maxRunning, maxAttempts,
 * backoffBaseMs, backoffMaxMs, timeoutMs: queue-settings.ts, the shape the library and the API take
 * too) live in the `queues` table, and a worker started with them writes them there at start, for
 * every worker, recorded in the queue's changes as made by that worker.
 *
 *   { "leaseMs": 30000, "pollMs": 1000, "timeoutGraceMs": 5000, "shutdownGraceMs": 10000,
 *     "batchSize": 1000, "registryHeartbeatMs": 5000,
 *     "queues": { "emails": { "concurrency": 20, "claimAhead": 100, "maxRunning": 100, "maxAttempts": 5,
 *                             "backoffBaseMs": 1000, "backoffMaxMs": 600000, "timeoutMs": 30000 } } }
 */
import type { QueueSettings } from '../store/queues.ts';
import { QueueInputError, queueSettingsCheck, QueueSettingsSchema } from './queue-settings.ts';

export interface WorkerQueueConfig {
  name: string;
  concurrency: number;
  /** Jobs claimed ahead of free slots (QueueOptions.claimAhead); undefined: the worker's default. */
  claimAhead?: number;
  settings: Partial<QueueSettings>;
}

export interface WorkerConfig {
  leaseMs?: number;
  pollMs?: number;
  timeoutGraceMs?: number;
  shutdownGraceMs?: number;
  batchSize?: number;
  registryHeartbeatMs?: number;
  queues: WorkerQueueConfig[];
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const LOCAL_SETTINGS = [
  'leaseMs',
  'pollMs',
  'timeoutGraceMs',
  'shutdownGraceMs',
  'batchSize',
  'registryHeartbeatMs',
] as const;

const QUEUE_RE = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
const DEFAULT_CONCURRENCY = 10;

function positiveInt(value: unknown, field: string, min = 1): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > 2_147_483_647) {
    throw new ConfigError(`${field}: must be an integer ≥ ${min}, got ${JSON.stringify(value)}`);
  }
  return value;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function queueName(name: string, field: string): string {
  if (!QUEUE_RE.test(name)) throw new ConfigError(`${field}: '${name}' is not a valid queue name`);
  return name;
}

/** Parses a config file's contents (already JSON.parse'd). */
export function parseConfigFile(raw: unknown): WorkerConfig {
  if (!isRecord(raw)) throw new ConfigError('config: must be a JSON object');
  const known = new Set([...LOCAL_SETTINGS, 'queues']);
  for (const k of Object.keys(raw)) if (!known.has(k)) throw new ConfigError(`config.${k}: unknown setting`);
  const config: WorkerConfig = { queues: [] };
  for (const k of LOCAL_SETTINGS) {
    if (raw[k] !== undefined) config[k] = positiveInt(raw[k], `config.${k}`, k === 'timeoutGraceMs' ? 0 : 1);
  }
  if (raw.queues !== undefined) {
    if (!isRecord(raw.queues))
      throw new ConfigError('config.queues: must be an object of queue name → settings');
    for (const [name, q] of Object.entries(raw.queues)) {
      const field = `config.queues.${name}`;
      queueName(name, field);
      if (!isRecord(q)) throw new ConfigError(`${field}: must be an object`);
      const { concurrency: _c, claimAhead: _a, ...rest } = q;
      let settings: Partial<QueueSettings>;
      try {
        settings = queueSettingsCheck(rest, field);
      } catch (error) {
        if (error instanceof QueueInputError) {
          const reason = error.reason.startsWith('unknown setting')
            ? `unknown setting (expected one of concurrency, claimAhead, ${Object.keys(QueueSettingsSchema.properties).join(', ')})`
            : error.reason;
          throw new ConfigError(`${error.field}: ${reason}`, { cause: error });
        }
        throw error;
      }
      const concurrency =
        q.concurrency === undefined
          ? DEFAULT_CONCURRENCY
          : positiveInt(q.concurrency, `${field}.concurrency`);
      config.queues.push({
        name,
        concurrency,
        settings,
        ...(q.claimAhead === undefined
          ? {}
          : { claimAhead: positiveInt(q.claimAhead, `${field}.claimAhead`, 0) }),
      });
    }
  }
  return config;
}

/** `--queue NAME[:CONCURRENCY]`: adds the queue, or sets the concurrency of one from the file. */
export function applyQueueFlags(config: WorkerConfig, flags: readonly string[]): WorkerConfig {
  const queues = [...config.queues];
  for (const flag of flags) {
    const match = /^([^:]+)(?::(.*))?$/.exec(flag);
    const name = queueName(match?.[1] ?? '', `--queue ${flag}`);
    const concurrency = match?.[2] === undefined ? DEFAULT_CONCURRENCY : Number(match[2]);
    positiveInt(concurrency, `--queue ${flag}: concurrency`);
    const i = queues.findIndex((q) => q.name === name);
    if (i >= 0) queues[i] = { ...queues[i]!, concurrency };
    else queues.push({ name, concurrency, settings: {} });
  }
  return { ...config, queues };
}
