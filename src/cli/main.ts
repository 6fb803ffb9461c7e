/**
 * The `tidemark` command line. Each command lives in its own module and is loaded only when named,
 * so `tidemark next` does not pay for the PostgreSQL driver and `tidemark dev` does not parse cron.
 */
import { UsageError } from './usage-error.ts';

export interface Command {
  summary: string;
  run(args: string[]): Promise<number>;
}

const commands: Record<string, () => Promise<Command>> = {
  dev: async () => (await import('./dev.ts')).command,
  migrate: async () => (await import('./migrate.ts')).command,
  scheduler: async () => (await import('./scheduler.ts')).command,
  api: async () => (await import('./api.ts')).command,
  push: async () => (await import('./push.ts')).command,
  schedule: async () => (await import('./http/schedule.ts')).command,
  job: async () => (await import('./http/job.ts')).command,
  dlq: async () => (await import('./http/dlq.ts')).command,
  workflow: async () => (await import('./http/workflow.ts')).command,
  token: async () => (await import('./http/token.ts')).command,
  tenant: async () => (await import('./http/tenant.ts')).command,
  queue: async () => (await import('./http/queue.ts')).command,
  workers: async () => (await import('./http/workers.ts')).command,
  next: async () => (await import('./next.ts')).command,
  explain: async () => (await import('./explain.ts')).command,
  worker: async () => (await import('./worker.ts')).command,
};

/** Loads every command for its summary: only `--help` pays for that. */
async function usage(): Promise<string> {
  const names = Object.keys(commands).sort();
  const summaries = await Promise.all(names.map(async (n) => (await commands[n]?.())?.summary ?? ''));
  const width = Math.max(...names.map((n) => n.length));
  const lines = names.map((n, i) => `  ${n.padEnd(width)}  ${summaries[i] ?? ''}`);
  return `usage: tidemark <command> [options]\n\ncommands:\n${lines.join('\n')}\n\nRun 'tidemark <command> --help' for a command's options.`;
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${await usage()}\n`);
    return name === undefined ? 2 : 0;
  }
  const load = commands[name];
  if (load === undefined) {
    process.stderr.write(`tidemark: unknown command '${name}'\n\n${await usage()}\n`);
    return 2;
  }
  const command = await load();
  try {
    return await command.run(rest);
  } catch (error) {
    if (error instanceof UsageError || isParseArgsError(error)) {
      process.stderr.write(`tidemark ${name}: ${error.message}\n`);
      return 2;
    }
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`tidemark ${name}: ${message}\n`);
    return 1;
  }
}

/** node:util parseArgs's own refusals (unknown option, missing or ambiguous value) are usage errors too. */
function isParseArgsError(error: unknown): error is Error {
  return error instanceof Error && String((error as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS_');
}
