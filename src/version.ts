/** This build's version, from the package's own package.json (one folder up from src/ and dist/ alike). */
import { readFileSync } from 'node:fs';

function readVersion(): string {
  const raw: unknown = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  const version =
    typeof raw === 'object' && raw !== null ? (raw as { version?: unknown }).version : undefined;
  return typeof version === 'string' ? version : 'unknown';
}

export const VERSION = readVersion();
