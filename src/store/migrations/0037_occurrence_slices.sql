-- The occurrence ledger is partitioned by fire time into slices of a UTC day, which the maintenance
-- role attaches ahead of the clock and drops whole once every row in them is past retention, their
-- lateness summed into the rollups first (store/occurrence-slices.ts). Deleted row by row, the
-- ledger went at ~500 rows a second with their rollups, each batch's WAL and full-page images on the
-- commits of the claim path: the p99 of enqueue → start read 1.56x with that pruning on.
--
-- A unique index on a partitioned table must hold the partition key: (schedule_id, fire_at) does,
-- and the primary key becomes (id, fire_at). Ids stay unique by their sequence.

CREATE SEQUENCE tidemark_occurrences_id_next AS bigint;
SELECT setval('tidemark_occurrences_id_next', last_value, is_called) FROM occurrences_id_seq;

ALTER TABLE occurrences RENAME TO occurrences_flat;
CREATE TABLE occurrences (LIKE occurrences_flat INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)
  PARTITION BY RANGE (fire_at);
ALTER TABLE occurrences ALTER COLUMN id SET DEFAULT nextval('tidemark_occurrences_id_next');

-- A slice per UTC day from the oldest row's (rows older than 35 days share the first, which has no
-- lower bound) to two days ahead. Rows no slice covers, a backfill older than the oldest slice or
-- fire times past the newest while the role is not running, go to the default partition, which
-- retention prunes row by row.
DO $$
DECLARE
  today timestamptz := date_trunc('day', now(), 'UTC');
  oldest timestamptz := greatest(date_trunc('day', coalesce((SELECT min(fire_at) FROM occurrences_flat), now()), 'UTC'),
                                today - interval '35 days');
  d timestamptz := oldest;
BEGIN
  WHILE d <= today + interval '2 days' LOOP
    EXECUTE format(
      'CREATE TABLE %I PARTITION OF occurrences FOR VALUES FROM (%s) TO (%L)
         WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02,
               vacuum_index_cleanup = on)',
      'occurrences_' || to_char(d AT TIME ZONE 'UTC', 'YYYYMMDD"t"HH24MISS'),
      CASE WHEN d = oldest THEN 'MINVALUE' ELSE quote_literal(d) END,
      d + interval '1 day');
    d := d + interval '1 day';
  END LOOP;
END
$$;
CREATE TABLE occurrences_default PARTITION OF occurrences DEFAULT
  WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02, vacuum_index_cleanup = on);

INSERT INTO occurrences (id, schedule_id, fire_at, state, materialised_at, epoch, job_id, reason, source,
                         schedule_version, backfill)
SELECT id, schedule_id, fire_at, state, materialised_at, epoch, job_id, reason, source, schedule_version, backfill
  FROM occurrences_flat;

DROP TABLE occurrences_flat;
ALTER SEQUENCE tidemark_occurrences_id_next RENAME TO occurrences_id_seq;
ALTER SEQUENCE occurrences_id_seq OWNED BY occurrences.id;

ALTER TABLE occurrences ADD CONSTRAINT occurrences_pkey PRIMARY KEY (id, fire_at);
CREATE UNIQUE INDEX occurrences_scheduled_key ON occurrences (schedule_id, fire_at) WHERE source = 'schedule';
CREATE INDEX occurrences_triggered_idx ON occurrences (schedule_id, fire_at) WHERE source = 'trigger';
CREATE INDEX occurrences_fire_brin ON occurrences USING brin (fire_at) WITH (autosummarize = on);
ANALYZE occurrences;
