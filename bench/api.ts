/**
 * API throughput: a real `tidemark api` process against the bench database, loaded from this
 * process (the load generator) over keep-alive HTTP connections. Schedule creation, single-job
 * enqueue and 100-job batches; requests per second and latency percentiles.
 */
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { spawn } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { tokenMint } from '../src/api/tokens.ts';
import { benchDatabase } from './db.ts';
import { percentile, type Bench, type BenchRow } from './table.ts';

const DURATION_MS = Number(process.env.TIDEMARK_BENCH_API_MS ?? 5000);
const CONCURRENCY = 32;
const CLI = [
  '--import',
  import.meta.resolve('tsx'),
  fileURLToPath(new URL('../src/cli/bin.ts', import.meta.url)),
];

interface Load {
  requests: number;
  errors: number;
  latenciesMs: number[];
  elapsedMs: number;
}

async function load(
  base: string,
  token: string,
  path: string,
  body: ((i: number) => unknown) | undefined,
): Promise<Load> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const url = new URL(path, base);
  const latenciesMs: number[] = [];
  let errors = 0;
  let i = 0;
  const start = performance.now();
  const one = (payload: string): Promise<number> =>
    new Promise((resolve, reject) => {
      const req = request(
        url,
        {
          method: payload === '' ? 'GET' : 'POST',
          agent,
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(payload),
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() - start < DURATION_MS) {
        const payload = body === undefined ? '' : JSON.stringify(body(i++));
        const t0 = performance.now();
        const status = await one(payload);
        latenciesMs.push(performance.now() - t0);
        if (status >= 300) errors++;
      }
    }),
  );
  const elapsedMs = performance.now() - start;
  agent.destroy();
  return { requests: latenciesMs.length, errors, latenciesMs, elapsedMs };
}

function row(name: string, l: Load, perRequest = 1): BenchRow {
  const rps = (l.requests / l.elapsedMs) * 1000;
  return {
    group: 'api',
    name,
    value:
      perRequest === 1
        ? `${Math.round(rps)} req/s`
        : `${Math.round(rps * perRequest)} jobs/s (${Math.round(rps)} req/s)`,
    note: `p50 ${percentile(l.latenciesMs, 50).toFixed(1)} ms, p99 ${percentile(l.latenciesMs, 99).toFixed(1)} ms, ${CONCURRENCY} connections, ${l.errors} errors`,
  };
}

export const bench: Bench = async () => {
  const db = await benchDatabase();
  const child = spawn(process.execPath, [...CLI, 'api', '--port', '0'], {
    env: { ...process.env, DATABASE_URL: db.url, TIDEMARK_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const base = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString('utf8');
        const m = /listening on (\S+)/.exec(out);
        if (m?.[1] !== undefined) resolve(m[1]);
      });
      child.on('exit', (code) => reject(new Error(`tidemark api exited (${code})`)));
    });
    const { token } = await tokenMint(db.pool, { tenantId: null, name: 'bench', ratePerS: 1_000_000 });
    // The HTTP ceiling of this machine at this moment (no database, no authentication): the
    // rows below are read against it, as the machine is shared and its load varies.
    const health = await load(base, token, '/healthz', undefined);
    const run = Date.now();
    const schedules = await load(base, token, '/v1/schedules', (i) => ({
      name: `bench-${run}-${i}`,
      spec: 'every weekday at 9am',
      timeZone: 'Europe/Berlin',
      target: { url: 'https://example.test/hook', payload: { i } },
    }));
    const jobs = await load(base, token, '/v1/jobs', (i) => ({ queue: 'bench', kind: 'k', payload: { i } }));
    const batches = await load(base, token, '/v1/jobs', (i) => ({
      jobs: Array.from({ length: 100 }, (_, j) => ({ queue: 'bench-batch', kind: 'k', payload: { i, j } })),
    }));
    return [
      {
        ...row('GET /healthz (no database, no auth: the HTTP ceiling now)', health),
        target: `reference; load average ${loadavg()[0]?.toFixed(1)} on ${cpus().length} cores`,
      },
      row('POST /v1/schedules (phrase + zone, URL target)', schedules),
      row('POST /v1/jobs, one job per request', jobs),
      row('POST /v1/jobs, 100 jobs per request', batches, 100),
    ];
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await db.close();
  }
};
