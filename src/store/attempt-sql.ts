/**
 * The condition every statement that finishes attempts puts on `jobs j`: the job is one of the batch
 * (ids ascending in `ids`, each one's attempt at the same place in `attempts`, found by binary search
 * with width_bucket) and still running under `owner`. Placeholders are the caller's.
 */
export function ownedAttemptSql(ids: string, attempts: string, owner: string): string {
  return `j.id = ANY (${ids}::bigint[]) AND j.attempt = (${attempts}::int[])[width_bucket(j.id, ${ids}::bigint[])]
          AND j.state = 'running' AND j.lease_owner = ${owner}`;
}
