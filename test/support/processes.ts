/**
 * Real Tidemark processes for failure tests: spawn `bin/tidemark.js` as a child, wait for what it
 * prints, kill it (SIGKILL by default). Every child still running when the file's tests end is killed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../bin/tidemark.js', import.meta.url));

export interface SpawnOptions {
  env?: Record<string, string | undefined>;
  cwd?: string;
  /** Run under Debian's faketime with this spec, e.g. '-5m' (the process's clock only). */
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
    const [command, commandArgs] =
      options.faketime === undefined
        ? [process.execPath, [BIN, ...args]]
        : ['faketime', ['-f', options.faketime, process.execPath, BIN, ...args]];
    this.child = spawn(command, commandArgs, {
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

const running = new Set<TidemarkProcess>();
after(async () => {
  await Promise.all([...running].map((p) => p.kill('SIGKILL')));
});

export function spawnTidemark(args: string[], options?: SpawnOptions): TidemarkProcess {
  return new TidemarkProcess(args, options);
}
