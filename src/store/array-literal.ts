/**
 * PostgreSQL array literals ('{a,"b c",NULL}') built from values one element at a time, so a caller
 * can serialise rows ahead of the statement that sends them. pg serialises a JavaScript array
 * parameter itself, but only when the statement is sent, and slowly for dates (a local-time string
 * per element): ~100–250 ms for a 2,500-row occurrence write on 2 loaded cores.
 */

/** One element: NULL, or the value quoted (so no text is ever read as NULL or split at a comma). */
export function arrayElement(value: string | number | boolean | Date | null): string {
  if (value === null) return 'NULL';
  if (value instanceof Date) return `"${value.toISOString()}"`;
  if (typeof value === 'boolean') return value ? 't' : 'f';
  if (typeof value === 'number') return String(value);
  return `"${value.replace(/[\\"]/g, '\\$&')}"`;
}

/**
 * The array literal of elements made by arrayElement, or of plain numbers (which need no quoting).
 * Also for int and bigint array parameters of batch statements: pg's own serialisation of a
 * JavaScript array builds the text one element at a time, and in the drain bench the id and attempt
 * arrays of each 1,000-job completion were an eighth of all the worker's allocation (heap profile).
 */
export function arrayLiteral(elements: readonly (string | number)[]): string {
  return `{${elements.join(',')}}`;
}
