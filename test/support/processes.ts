/**
 * Real Tidemark processes for failure tests: spawn the CLI (its sources, through tsx) as a child, wait for what it
 * prints, kill it (SIGKILL by default). Every child still running when the file's tests end is killed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';

/** Node arguments that run the `tidemark` command from this checkout's sources, from any folder. */
export const CLI = [
  '--import',
  import.meta.resolve('tsx'),
  fileURLToPath(new URL('../../src/cli/bin.ts', import.meta.url)),
];

export interface SpawnOptions {
  env?: Record<string, string | undefined>;
  cwd?: string;
  /** Run with libfaketime and this offset, e.g. '-5m': the process's wall clock only. */
  faketime?: string;
  /** Run as this user and group id (the harness runs as root in CI; some tests need a normal user). */
  uid?: number;
  gid?: number;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class TidemarkProcess {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  readonly exited: Promise<Exit>;

  constructor(args: string[], options: SpawnOptions = {}) {
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const [k, v] of Object.entries(options.env ?? {})) {
      if (v === undefined) delete env[k];
      else env[k] = v;
    }
    if (options.faketime !== undefined) Object.assign(env, fakeTimeEnv(options.faketime));
    this.child = spawn(process.execPath, [...CLI, ...args], {
      env,
      cwd: options.cwd,
      uid: options.uid,
      gid: options.gid,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout?.on('data', (chunk: Buffer) => (this.stdout += chunk.toString('utf8')));
    this.child.stderr?.on('data', (chunk: Buffer) => (this.stderr += chunk.toString('utf8')));
    this.exited = new Promise((done) => this.child.on('exit', (code, signal) => done({ code, signal })));
    running.add(this);
    void this.exited.then(() => running.delete(this));
  }

  get pid(): number {
    if (this.child.pid === undefined) throw new Error('process did not start');
    return this.child.pid;
  }

  /** Resolves with the first match of `pattern` in stdout; rejects on exit or after `timeoutMs`. */
  async waitFor(pattern: RegExp, timeoutMs = 30_000): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    let exit: Exit | undefined;
    void this.exited.then((e) => (exit = e));
    for (;;) {
      const match = pattern.exec(this.stdout);
      if (match !== null) return match;
      if (exit !== undefined || Date.now() > deadline) {
        const why =
          exit === undefined ? `not seen within ${timeoutMs} ms` : `process exited (${JSON.stringify(exit)})`;
        throw new Error(
          `${pattern} ${why}\n--- stdout\n${this.stdout}\n--- stderr\n${this.stderr.slice(-4000)}`,
        );
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<Exit> {
    this.child.kill(signal);
    return this.exited;
  }
}

export const LIBFAKETIME = [
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/faketime/libfaketime.so.1',
].find((p) => existsSync(p));

/**
 * libfaketime preloaded into node itself rather than the `faketime` wrapper, which runs node as its
 * child and does not pass signals on: a SIGKILL must reach the process under test.
 */
function fakeTimeEnv(spec: string): Record<string, string> {
  if (LIBFAKETIME === undefined)
    throw new Error('libfaketime not found: install the Debian package `faketime`');
  // Only the wall clock moves: monotonic time is what the code under test must keep trusting.
  return { LD_PRELOAD: LIBFAKETIME, FAKETIME: spec, FAKETIME_DONT_FAKE_MONOTONIC: '1' };
}

const running = new Set<TidemarkProcess>();
after(async () => {
  await Promise.all([...running].map((p) => p.kill('SIGKILL')));
});

export function spawnTidemark(args: string[], options?: SpawnOptions): TidemarkProcess {
  return new TidemarkProcess(args, options);
}
