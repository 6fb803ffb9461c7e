import { UsageError } from './usage-error.ts';

export function requireDatabaseUrl(): string {
  const url = process.env.DATABASE_URL;
  if (url === undefined || url === '') {
    throw new UsageError('DATABASE_URL is not set (or run `tidemark dev`, which starts its own PostgreSQL)');
  }
  return url;
}
