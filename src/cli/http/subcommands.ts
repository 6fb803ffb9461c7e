/** A command with subcommands (`tidemark job ls`), each parsing its own options. */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { Command } from '../main.ts';
import { UsageError } from '../usage-error.ts';
import { apiClient, CONNECTION_OPTIONS, type ApiClient } from './api-client.ts';

type Options = NonNullable<ParseArgsConfig['options']>;

export interface Sub<B = ApiClient> {
  usage: string;
  /** Printed under the usage by `tidemark <command> <sub> --help`: one line per option, and notes. */
  help?: string;
  options?: Options;
  run(
    backend: B,
    positionals: string[],
    values: Record<string, string | boolean | undefined>,
  ): Promise<number>;
}

/** What a command acts through: the API client by default; `close` is called when it is done. */
export interface Connect<B> {
  open(values: { url?: string; token?: string }): B;
  close?(backend: B): Promise<void>;
  note?: string;
}

const API: Connect<ApiClient> = { open: apiClient };

export function subcommands(name: string, summary: string, subs: Record<string, Sub>): Command;
export function subcommands<B>(
  name: string,
  summary: string,
  subs: Record<string, Sub<B>>,
  connect: Connect<B>,
): Command;
export function subcommands<B>(
  name: string,
  summary: string,
  subs: Record<string, Sub<B>>,
  connect: Connect<B> = API as unknown as Connect<B>,
): Command {
  const help = (): string =>
    `usage: tidemark ${name} <${Object.keys(subs).join('|')}> … [--url URL] [--token T] [--json]\n\n` +
    Object.values(subs)
      .map((s) => `  tidemark ${name} ${s.usage}`)
      .join('\n') +
    `\n\n${connect.note ?? '--url defaults to TIDEMARK_URL (else http://127.0.0.1:8787), --token to TIDEMARK_TOKEN.'}\n`;
  return {
    summary,
    async run(args) {
      const [subName, ...rest] = args;
      if (subName === undefined || subName === '--help' || subName === '-h') {
        process.stdout.write(help());
        return subName === undefined ? 2 : 0;
      }
      const sub = subs[subName];
      if (sub === undefined) throw new UsageError(`unknown subcommand '${subName}'\n\n${help()}`);
      const { values, positionals } = parseArgs({
        args: rest,
        allowPositionals: true,
        options: { ...CONNECTION_OPTIONS, ...sub.options },
      });
      if (values.help === true) {
        const details = sub.help === undefined ? '' : `\n${sub.help}`;
        process.stdout.write(`usage: tidemark ${name} ${sub.usage}\n${details}`);
        return 0;
      }
      const backend = connect.open(values);
      try {
        return await sub.run(backend, positionals, values);
      } finally {
        await connect.close?.(backend);
      }
    },
  };
}

export function str(values: Record<string, string | boolean | undefined>, key: string): string | undefined {
  const v = values[key];
  return typeof v === 'string' ? v : undefined;
}
