/**
 * `npm run test:consumer`: the package as a user gets it. Packs the project, installs only that
 * tarball into fresh projects of four kinds (ESM JavaScript, CommonJS JavaScript, TypeScript with
 * `moduleResolution: nodenext`, TypeScript with `bundler`) and, on Node 20, 22 and 24 each, imports
 * `Client` and `Worker` (and `SignalTimer` from `tidemark/operations`), migrates with `tidemark migrate`, enqueues a job, runs it with the
 * project's handlers module through `tidemark worker` and waits for it to succeed, and runs
 * `tidemark next`. TypeScript projects are typechecked with `tsc --noEmit`. Then `tidemark dev`
 * from an installed copy in a 0700 folder (the binaries and data its server's user cannot reach,
 * under root), publint and arethetypeswrong on the tarball, and the CLI's start time.
 *
 * Node 22 and 24 come from the npm registry's `node` package (no other download). PostgreSQL is
 * DATABASE_URL's server when set, else an embedded one, as for `npm test`.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { databaseCreate, databaseDrop, databaseUrl } from '../src/store/databases.ts';
import { DEFAULT_EMBEDDED_PORT, startEmbedded, type EmbeddedServer } from '../src/store/embedded.ts';

const exec = promisify(execFile);
const REPO = resolve(import.meta.dirname, '..');
const NODE_MAJORS = ['22', '24'];
const SHARED_BINARIES = '/var/tmp/tidemark-postgres';

interface Run {
  stdout: string;
  stderr: string;
}

function say(line: string): void {
  process.stdout.write(`consumer: ${line}\n`);
}

async function sh(
  file: string,
  args: string[],
  options: { cwd: string; path?: string; env?: NodeJS.ProcessEnv },
): Promise<Run> {
  const env = {
    ...process.env,
    ...options.env,
    PATH: options.path ?? process.env.PATH ?? '',
    npm_config_update_notifier: 'false',
  };
  try {
    return await exec(file, args, { cwd: options.cwd, env, maxBuffer: 64 * 1024 * 1024, timeout: 300_000 });
  } catch (error) {
    const e = error as Error & Partial<Run>;
    throw new Error(
      `${file} ${args.join(' ')} (in ${options.cwd}) failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`,
    );
  }
}

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; s: number }> {
  const started = performance.now();
  const value = await work();
  return { value, s: (performance.now() - started) / 1000 };
}

/** A bin folder whose `node` is that major version, from the npm registry's `node` package. */
async function nodeBin(major: string, root: string): Promise<string> {
  const dir = join(root, `node${major}`);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'package.json'), '{"private":true}');
  await sh('npm', ['install', '--no-audit', '--no-fund', '--silent', `node@${major}`], { cwd: dir });
  return join(dir, 'node_modules', '.bin');
}

interface Kind {
  name: string;
  manifest: Record<string, unknown>;
  files: Record<string, string>;
  devDependencies: string[];
  handlers: string;
  /** Node arguments that run the app file on a Node without type stripping. */
  app: string;
  typescript: boolean;
}

const APP_BODY = (imports: string): string => `${imports}
const { execPath } = process;
const url = process.env.DATABASE_URL ?? '';
const handlersFile = process.env.HANDLERS_FILE ?? '';
const tidemarkBin = process.env.TIDEMARK_BIN ?? '';
if (typeof Worker !== 'function') throw new Error('Worker is not exported');
if (typeof SignalTimer !== 'function') throw new Error('tidemark/operations does not export SignalTimer');
const client = new Client({ connectionString: url });
try {
  const job = await client.jobs.enqueue({ queue: 'consumer', kind: 'hello', payload: { who: process.version } });
  const worker = spawn(execPath, [tidemarkBin, 'worker', '--handlers', handlersFile, '--queue', 'consumer'], {
    stdio: ['ignore', 'inherit', 'pipe'],
  });
  let stderr = '';
  worker.stderr.on('data', (chunk) => (stderr += chunk));
  try {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const found = await client.jobs.get(job.id);
      if (found?.state === 'succeeded') break;
      if (found?.state === 'dead' || Date.now() > deadline || worker.exitCode !== null) {
        throw new Error('job ' + job.id + ' is ' + found?.state + '; worker said: ' + stderr.slice(-2000));
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    console.log('job ' + job.id + ' succeeded on ' + process.version);
  } finally {
    worker.kill('SIGTERM');
  }
} finally {
  await client.close();
}
`;

const TS_HANDLERS = `import type { HandlerContext, Handlers } from 'tidemark';

const handlers: Handlers = {
  hello: async (ctx: HandlerContext) => ({ greeted: (ctx.payload as { who: string }).who }),
};
export default handlers;
`;

const TSCONFIG = (resolution: string, module: string): string =>
  JSON.stringify({
    compilerOptions: {
      target: 'ES2022',
      module,
      moduleResolution: resolution,
      strict: true,
      noEmit: true,
      types: ['node'],
      skipLibCheck: false,
    },
    include: ['*.ts'],
  });

const TS_APP = APP_BODY(`import { spawn } from 'node:child_process';
import { Client, Worker, type EnqueueInput } from 'tidemark';
import { SignalTimer } from 'tidemark/operations';
const typed: EnqueueInput = { queue: 'consumer', kind: 'hello' };
void typed;`).replace('(chunk) =>', '(chunk: Buffer) =>');

const KINDS: Kind[] = [
  {
    name: 'esm-js',
    manifest: { type: 'module' },
    files: {
      'app.js': APP_BODY(
        `import { spawn } from 'node:child_process';\nimport { Client, Worker } from 'tidemark';\nimport { SignalTimer } from 'tidemark/operations';`,
      ),
      'handlers.js': `export default { hello: async (ctx) => ({ greeted: ctx.payload.who }) };\n`,
    },
    devDependencies: [],
    handlers: 'handlers.js',
    app: 'app.js',
    typescript: false,
  },
  {
    name: 'cjs-js',
    manifest: { type: 'commonjs' },
    files: {
      'app.js': `const { spawn } = require('node:child_process');\nconst { Client, Worker } = require('tidemark');\nconst { SignalTimer } = require('tidemark/operations');\n(async () => {\n${APP_BODY('')}\n})().catch((error) => {\n  console.error(error);\n  process.exitCode = 1;\n});\n`,
      'handlers.js': `module.exports = { hello: async (ctx) => ({ greeted: ctx.payload.who }) };\n`,
    },
    devDependencies: [],
    handlers: 'handlers.js',
    app: 'app.js',
    typescript: false,
  },
  {
    name: 'ts-nodenext',
    manifest: { type: 'module' },
    files: {
      'app.ts': TS_APP,
      'handlers.ts': TS_HANDLERS,
      'tsconfig.json': TSCONFIG('nodenext', 'nodenext'),
    },
    devDependencies: ['typescript@5.9', '@types/node@20', 'tsx'],
    handlers: 'handlers.ts',
    app: 'app.ts',
    typescript: true,
  },
  {
    name: 'ts-bundler',
    manifest: { type: 'module' },
    files: { 'app.ts': TS_APP, 'handlers.ts': TS_HANDLERS, 'tsconfig.json': TSCONFIG('bundler', 'esnext') },
    devDependencies: ['typescript@5.9', '@types/node@20', 'tsx'],
    handlers: 'handlers.ts',
    app: 'app.ts',
    typescript: true,
  },
];

async function project(
  root: string,
  kind: Kind,
  tarball: string,
): Promise<{ dir: string; installS: number }> {
  const dir = join(root, kind.name);
  await mkdir(dir);
  await writeFile(
    join(dir, 'package.json'),
    JSON.stringify({ name: `consumer-${kind.name}`, private: true, ...kind.manifest }),
  );
  for (const [file, text] of Object.entries(kind.files)) await writeFile(join(dir, file), text);
  const { s } = await timed(() =>
    sh('npm', ['install', '--no-audit', '--no-fund', '--silent', tarball], { cwd: dir }),
  );
  if (kind.devDependencies.length > 0) {
    await sh(
      'npm',
      ['install', '--no-audit', '--no-fund', '--silent', '--save-dev', ...kind.devDependencies],
      { cwd: dir },
    );
  }
  return { dir, installS: s };
}

function stripsTypes(major: string): boolean {
  return major !== '20';
}

async function runKind(
  dir: string,
  kind: Kind,
  major: string,
  bin: string | undefined,
  url: string,
): Promise<string> {
  const path = bin === undefined ? process.env.PATH : `${bin}${delimiter}${process.env.PATH ?? ''}`;
  const node = bin === undefined ? process.execPath : join(bin, 'node');
  const version = (await sh(node, ['--version'], { cwd: dir })).stdout.trim();
  if (!version.startsWith(`v${major}.`)) throw new Error(`asked for Node ${major}, got ${version}`);
  const tidemarkBin = join(dir, 'node_modules', 'tidemark', 'dist', 'cli', 'bin.js');
  await sh(node, [tidemarkBin, 'migrate'], { cwd: dir, path, env: { DATABASE_URL: url } }).catch(
    (error: Error) => {
      throw new Error(`tidemark migrate: ${error.message}`);
    },
  );
  const appArgs = kind.typescript && !stripsTypes(major) ? ['--import', 'tsx', kind.app] : [kind.app];
  const env = {
    DATABASE_URL: url,
    HANDLERS_FILE: kind.handlers,
    TIDEMARK_BIN: tidemarkBin,
    TIDEMARK_LOG_LEVEL: 'warn',
  };
  const out = await new Promise<string>((done, fail) => {
    const child = spawn(node, ['--no-warnings', ...appArgs], {
      cwd: dir,
      env: { ...process.env, ...env, PATH: path },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let text = '';
    child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    child.on('exit', (code) =>
      code === 0 ? done(text) : fail(new Error(`${kind.name} on ${version}: exit ${code}\n${text}`)),
    );
  });
  const next = await sh(node, [tidemarkBin, 'next', 'every weekday at 9am', '--tz', 'Europe/Berlin'], {
    cwd: dir,
    path,
  });
  if (!/Monday through Friday \(Europe\/Berlin\)/.test(next.stdout))
    throw new Error(`tidemark next printed: ${next.stdout}`);
  const succeeded = /job \d+ succeeded on v[\d.]+/.exec(out)?.[0] ?? '';
  if (succeeded === '') throw new Error(`${kind.name} on ${version}: no success line\n${out}`);
  return `${succeeded}; tidemark next ok`;
}

/** `tidemark dev` from the installed package, in a folder only root may enter. */
async function devFromLockedFolder(tarball: string, root: string): Promise<string> {
  const locked = await mkdtemp(join(root, 'locked-'));
  await chmod(locked, 0o700);
  await writeFile(join(locked, 'package.json'), '{"private":true}');
  await sh('npm', ['install', '--no-audit', '--no-fund', '--silent', tarball], { cwd: locked });
  const env: NodeJS.ProcessEnv = { ...process.env, TIDEMARK_API_PORT: '0' };
  delete env.DATABASE_URL;
  const dev: ChildProcess = spawn(process.execPath, [join(locked, 'node_modules/.bin/tidemark'), 'dev'], {
    cwd: locked,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  dev.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  dev.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | null>((done) => dev.on('exit', (code) => done(code)));
  try {
    const deadline = Date.now() + 180_000;
    while (!/DATABASE_URL=/.test(stdout)) {
      if (Date.now() > deadline || dev.exitCode !== null)
        throw new Error(`tidemark dev did not start:\n${stdout}\n${stderr.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const api = /TIDEMARK_URL=(\S+)/.exec(stdout)?.[1] ?? '';
    const app = await fetch(`${api}/dashboard/app.js`);
    if (app.status !== 200 || (await app.text()).length < 1000)
      throw new Error(`dashboard app.js: ${app.status}`);
  } finally {
    dev.kill('SIGTERM');
  }
  const code = await exited;
  if (code !== 0) throw new Error(`tidemark dev exited ${code} on SIGTERM:\n${stderr.slice(-3000)}`);
  if (process.getuid?.() !== 0)
    return 'tidemark dev in a 0700 folder: started, served the dashboard bundle, stopped with exit 0';
  const clusterDir =
    (await readFile(join(locked, '.tidemark', 'cluster-location'), 'utf8')).split('\n')[0] ?? '';
  await rm(dirname(clusterDir), { recursive: true, force: true });
  const binaries = (await readdir(SHARED_BINARIES)).join(', ');
  return `tidemark dev as root in a 0700 folder: started with its cluster in ${clusterDir} and the binaries in ${SHARED_BINARIES}/${binaries}, served the dashboard bundle, stopped with exit 0`;
}

async function cliStartMedian(dir: string): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 10; i++) {
    const { s } = await timed(() =>
      sh(
        join(dir, 'node_modules/.bin/tidemark'),
        ['next', 'every weekday at 9am', '--tz', 'Europe/Berlin', '--count', '1'],
        { cwd: dir },
      ),
    );
    times.push(s);
  }
  times.sort((a, b) => a - b);
  return ((times[4] ?? 0) + (times[5] ?? 0)) / 2;
}

async function main(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'tidemark-consumer-'));
  await chmod(root, 0o755);
  let embedded: EmbeddedServer | undefined;
  let adminUrl = process.env.DATABASE_URL ?? '';
  const database = `tmc_${Math.floor(Date.now() / 1000)}_${randomBytes(3).toString('hex')}`;
  try {
    say('building and packing');
    await sh('npm', ['run', '--silent', 'build'], { cwd: REPO });
    const packArgs = ['pack', '--json', '--silent', '--ignore-scripts', '--pack-destination', root];
    const pack = JSON.parse((await sh('npm', packArgs, { cwd: REPO })).stdout) as {
      filename: string;
      size: number;
      unpackedSize: number;
      entryCount: number;
    }[];
    const packed = pack[0];
    if (packed === undefined) throw new Error('npm pack printed nothing');
    const tarball = join(root, packed.filename);
    say(
      `tarball ${packed.filename}: ${(packed.size / 1024).toFixed(0)} KB packed, ${(packed.unpackedSize / 1024).toFixed(0)} KB unpacked, ${packed.entryCount} files`,
    );

    const publint = await sh(join(REPO, 'node_modules/.bin/publint'), ['run', '--strict', tarball], {
      cwd: root,
    });
    say(`publint: ${publint.stdout.trim().split('\n').join(' | ') || 'no issues'}`);
    // The package is ES modules only. CommonJS code require()s it on every Node that engines allows
    // (require of ESM: 20.19, 22.12), as the cjs-js project below proves; attw's one complaint is that
    // TypeScript's older node16 model cannot express that, so that rule alone is off.
    const attwArgs = [
      tarball,
      '--format',
      'table-flipped',
      '--no-color',
      '--ignore-rules',
      'cjs-resolves-to-esm',
    ];
    const attw = await sh(join(REPO, 'node_modules/.bin/attw'), attwArgs, { cwd: root });
    say(`attw:\n${attw.stdout.trim()}`);

    if (adminUrl === '') {
      const dataDir = await mkdtemp(join(root, 'pg-'));
      await chmod(dataDir, 0o755);
      embedded = await startEmbedded({
        dataDir,
        port: DEFAULT_EMBEDDED_PORT + 3,
        settings: { fsync: 'off' },
      });
      adminUrl = embedded.adminUrl;
    }
    await databaseCreate(adminUrl, database);
    const url = databaseUrl(adminUrl, database);

    say('Node 22 and 24 from the npm registry');
    const bins = new Map<string, string | undefined>([['20', undefined]]);
    for (const major of NODE_MAJORS) bins.set(major, await nodeBin(major, root));
    const hostMajor = process.versions.node.split('.')[0] ?? '';
    if (hostMajor !== '20')
      throw new Error(`run the consumer test on Node 20 (the oldest supported); this is ${process.version}`);

    for (const kind of KINDS) {
      const { dir, installS } = await project(root, kind, tarball);
      say(`${kind.name}: installed the tarball in ${installS.toFixed(1)} s`);
      if (kind.typescript) {
        await sh(join(dir, 'node_modules/.bin/tsc'), ['--noEmit', '-p', '.'], { cwd: dir });
        say(`${kind.name}: tsc --noEmit: no errors`);
      }
      for (const [major, bin] of bins)
        say(`${kind.name} on Node ${major}: ${await runKind(dir, kind, major, bin, url)}`);
      if (kind.name === 'esm-js')
        say(`CLI start (tidemark next --count 1, median of 10): ${(await cliStartMedian(dir)).toFixed(2)} s`);
    }
    say(await devFromLockedFolder(tarball, root));
    say('all passed');
  } finally {
    await databaseDrop(adminUrl, database).catch(() => undefined);
    await embedded?.stop();
    await rm(root, { recursive: true, force: true });
  }
}

try {
  await main();
} catch (error) {
  process.stderr.write(`consumer: FAILED: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
