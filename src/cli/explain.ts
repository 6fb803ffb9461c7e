/** `tidemark explain <spec>`: what a spec compiles to, in Tidemark's terms and in words. */
import { parseArgs } from 'node:util';
import { compileSchedule, SpecError } from '../schedule/index.ts';
import type { Command } from './main.ts';
import { UsageError } from './usage-error.ts';

const HELP = `usage: tidemark explain <spec> [--tz ZONE] [--json]

Prints the kind, the canonical form the spec compiles to, its description and the DST rules in force.`;

export const command: Command = {
  summary: 'show what a schedule spec compiles to',
  run(args) {
    let parsed;
    try {
      parsed = parseArgs({
        args,
        allowPositionals: true,
        options: { tz: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      });
    } catch (error) {
      throw new UsageError(error instanceof Error ? error.message : String(error), { cause: error });
    }
    const { values, positionals } = parsed;
    if (values.help === true) {
      process.stdout.write(`${HELP}\n`);
      return Promise.resolve(0);
    }
    const spec = positionals.join(' ');
    if (spec.trim() === '') throw new UsageError(`a spec is required\n\n${HELP}`);
    try {
      const s = compileSchedule({ spec, timeZone: values.tz ?? 'UTC' });
      const dst = s.dst === null ? 'not affected by DST' : `gap ${s.dst.gap}, overlap ${s.dst.overlap}`;
      if (values.json === true) {
        const out = {
          kind: s.kind,
          canonical: s.canonical,
          description: s.description,
          timeZone: s.timeZone,
          dst: s.dst,
        };
        process.stdout.write(`${JSON.stringify(out)}\n`);
      } else {
        process.stdout.write(
          `kind:        ${s.kind}\ncompiles to: ${s.canonical}\ndescription: ${s.description}\ntime zone:   ${s.timeZone}\nDST:         ${dst}\n`,
        );
      }
      return Promise.resolve(0);
    } catch (error) {
      if (!(error instanceof SpecError)) throw error;
      process.stderr.write(`tidemark explain: ${error.message}\n`);
      return Promise.resolve(2);
    }
  },
};
