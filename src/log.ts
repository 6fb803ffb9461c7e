/** Structured logs (pino, JSON lines on stderr); stdout stays free for what a command prints. */
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(name: string): Logger {
  return pino({ name, level: process.env.TIDEMARK_LOG_LEVEL ?? 'info' }, pino.destination(2));
}
