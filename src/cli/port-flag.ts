/** `--metrics-port N`: a TCP port, 0 for a free one. */
import { UsageError } from './usage-error.ts';

export function portFlag(value: string | undefined, flag = 'metrics-port'): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65_535) {
    throw new UsageError(`--${flag}: must be a port number from 0 to 65535, got '${value}'`);
  }
  return n;
}
