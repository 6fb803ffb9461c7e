/**
 * Where a per-minute read of history splits between the minutes the maintenance role has rolled
 * up (history-rollup.ts) and the rows after them, as one CTE its statement reads, so a roll that
 * commits meanwhile is seen whole or not at all.
 */

/**
 * A one-row CTE body: where a read of `kind` (history_rolled's jobs or lag minutes) takes its rows
 * from, `live_from`, and whether the minutes before it come from the rollup (`rolled`, up to `upto`).
 * A window that starts before the rollup's first minute is read from the rows whole. A rolled minute
 * counts whole, also the one the window starts in. `$1` is the window's start.
 */
export function liveFrom(kind: 'jobs' | 'lag'): string {
  return `SELECT $1::timestamptz >= ${kind}_since AS rolled, ${kind}_upto AS upto,
                 CASE WHEN $1::timestamptz >= ${kind}_since THEN greatest($1::timestamptz, ${kind}_upto)
                      ELSE $1::timestamptz END AS live_from
            FROM history_rolled`;
}
