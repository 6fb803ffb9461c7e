/**
 * COPY … FROM STDIN in its text format: values escaped for it, and a helper that streams rows made
 * a chunk at a time into one COPY on the caller's connection. Used where many rows are written at once
 * (workflow nodes, bulk enqueue): COPY is parsed as it streams and written with multi-row inserts, where
 * one INSERT of `unnest` arrays first parses every array whole and inserts row by row.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { from as copyFrom } from 'pg-copy-streams';
import type { PoolClient } from './pool.ts';

export const COPY_NULL = '\\N';
const COPY_SPECIAL = /[\\\t\n\r]/;
const COPY_SPECIAL_ALL = /[\\\t\n\r]/g;
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** A value in COPY's text format: backslash, tab, newline and carriage return escaped; null is \N. */
export function copyText(value: string | null): string {
  if (value === null) return COPY_NULL;
  return COPY_SPECIAL.test(value) ? value.replace(COPY_SPECIAL_ALL, (c) => COPY_ESCAPES[c] ?? c) : value;
}

export function copyJson(value: unknown): string {
  return value === null || value === undefined ? COPY_NULL : copyText(JSON.stringify(value));
}

export function copyInt(value: number | null): string {
  return value === null ? COPY_NULL : String(value);
}

/**
 * Rows per string handed to COPY: a few hundred kilobytes, so each dies young and costs the GC
 * little, and the server parses one chunk while the next is made.
 */
export const COPY_CHUNK_ROWS = 2_000;

/** Runs `COPY <target> FROM STDIN` on `q` with the text chunks `rows` yields. */
export async function copyIn(
  q: Pick<PoolClient, 'query'>,
  target: string,
  rows: Iterable<string>,
): Promise<void> {
  await pipeline(Readable.from(rows), q.query(copyFrom(`COPY ${target} FROM STDIN`)));
}
