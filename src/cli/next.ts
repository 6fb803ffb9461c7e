/** `tidemark next <spec>`: the next fire times of a schedule, to check a spec before registering it. */
import { parseArgs } from 'node:util';
import { compileSchedule, formatLocal, SpecError, type CompileInput } from '../schedule/index.ts';
import type { Command } from './main.ts';
import { UsageError } from './usage-error.ts';

const HELP = `usage: tidemark next <spec> [--tz ZONE] [--from ISO] [--count N] [--dst-gap shift|skip] [--dst-overlap first|both] [--json]

Prints the next N fire times (default 5) after --from (default now), each as the UTC instant and
the local time with its offset in --tz (default UTC). --json prints [{"at": …, "local": …}, …].`;

export const command: Command = {
  summary: 'print the next fire times of a schedule spec',
  run(args) {
    const { values, positionals } = parse(args);
    if (values.help === true) {
      process.stdout.write(`${HELP}\n`);
      return Promise.resolve(0);
    }
    const spec = positionals.join(' ');
    if (spec.trim() === '') throw new UsageError(`a spec is required\n\n${HELP}`);
    const count = values.count === undefined ? 5 : Number(values.count);
    if (!Number.isSafeInteger(count) || count < 1 || count > 10_000) {
      throw new UsageError(`--count must be a whole number from 1 to 10000, got '${values.count}'`);
    }
    const from = values.from === undefined ? new Date() : new Date(values.from);
    if (Number.isNaN(from.getTime()))
      throw new UsageError(`--from must be an ISO 8601 instant, got '${values.from}'`);
    const input: CompileInput = { spec, timeZone: values.tz ?? 'UTC' };
    if (values['dst-gap'] !== undefined)
      input.dstGap = choice(values['dst-gap'], '--dst-gap', ['shift', 'skip'] as const);
    if (values['dst-overlap'] !== undefined) {
      input.dstOverlap = choice(values['dst-overlap'], '--dst-overlap', ['first', 'both'] as const);
    }

    try {
      const schedule = compileSchedule(input);
      const rows: { at: string; local: string }[] = [];
      for (let t = schedule.nextAfter(from); t !== null && rows.length < count; t = schedule.nextAfter(t)) {
        rows.push({ at: t.toISOString(), local: formatLocal(t, schedule.timeZone) });
      }
      if (values.json === true) {
        process.stdout.write(`${JSON.stringify(rows)}\n`);
      } else {
        process.stdout.write(`${schedule.description}\n`);
        for (const r of rows) process.stdout.write(`${r.at}  ${r.local}\n`);
        if (rows.length < count) process.stdout.write(`(no further fire times)\n`);
      }
      return Promise.resolve(0);
    } catch (error) {
      if (!(error instanceof SpecError)) throw error;
      process.stderr.write(`tidemark next: ${error.message}\n`);
      return Promise.resolve(2);
    }
  },
};

function parse(args: string[]) {
  try {
    return parseArgs({
      args,
      allowPositionals: true,
      options: {
        tz: { type: 'string' },
        from: { type: 'string' },
        count: { type: 'string', short: 'n' },
        'dst-gap': { type: 'string' },
        'dst-overlap': { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error), { cause: error });
  }
}

function choice<T extends string>(value: string, flag: string, allowed: readonly T[]): T {
  const found = allowed.find((a) => a === value);
  if (found === undefined)
    throw new UsageError(`${flag} must be one of ${allowed.join(', ')}, got '${value}'`);
  return found;
}
