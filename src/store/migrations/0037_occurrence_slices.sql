-- The occurrence ledger is partitioned by fire time into slices of a UTC day, which the maintenance
-- role attaches ahead of the clock and drops whole once every row in them is past retention, their
-- lateness summed into the rollups first (store/occurrence-slices.ts). Deleted row by row, the
-- ledger went at ~500 rows a second with their rollups, each batch's WAL and full-page images on the
-- commits of the claim path: the p99 of enqueue → start read 1.56x with that pruning on.
--
-- The existing table becomes the first slice, every fire time before tomorrow (UTC) or its newest
-- fire time's next day, instead of being copied: a copy of 30 days at 500 a second, 1.3 billion rows, would hold the ledger for hours.
-- Its rows go row by row as before until the slice comes due whole. A unique index on a partitioned
-- table must hold the partition key: (schedule_id, fire_at) does, and the primary key becomes (id,
-- fire_at), the one index ATTACH builds. Ids stay unique by their sequence, which a plain sequence of
-- the same name carries on (a partition cannot keep an identity column).

CREATE SEQUENCE tidemark_occurrences_id_next AS bigint;
SELECT setval('tidemark_occurrences_id_next', last_value, is_called) FROM occurrences_id_seq;
ALTER TABLE occurrences ALTER COLUMN id DROP IDENTITY;
ALTER TABLE occurrences ALTER COLUMN id SET DEFAULT nextval('tidemark_occurrences_id_next');
ALTER SEQUENCE tidemark_occurrences_id_next RENAME TO occurrences_id_seq;

ALTER TABLE occurrences RENAME TO occurrences_first;
ALTER TABLE occurrences_first DROP CONSTRAINT occurrences_pkey;
ALTER INDEX occurrences_scheduled_key RENAME TO occurrences_first_scheduled_key;
ALTER INDEX occurrences_triggered_idx RENAME TO occurrences_first_triggered_idx;
ALTER INDEX occurrences_fire_brin RENAME TO occurrences_first_fire_brin;

CREATE TABLE occurrences (LIKE occurrences_first INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)
  PARTITION BY RANGE (fire_at);
ALTER SEQUENCE occurrences_id_seq OWNED BY occurrences.id;
ALTER TABLE occurrences ADD CONSTRAINT occurrences_pkey PRIMARY KEY (id, fire_at);
CREATE UNIQUE INDEX occurrences_scheduled_key ON occurrences (schedule_id, fire_at) WHERE source = 'schedule';
CREATE INDEX occurrences_triggered_idx ON occurrences (schedule_id, fire_at) WHERE source = 'trigger';
CREATE INDEX occurrences_fire_brin ON occurrences USING brin (fire_at) WITH (autosummarize = on);

-- Then a slice for each of the next two days, and the default partition for fire times no slice
-- covers (a backfill older than the oldest slice, fire times past the newest while no role runs).
DO $$
DECLARE
  -- The first slice ends at the next UTC midnight after its newest fire time, or tomorrow.
  tomorrow timestamptz := greatest(date_trunc('day', now(), 'UTC'),
                                   date_trunc('day', (SELECT max(fire_at) FROM occurrences_first), 'UTC'))
                          + interval '1 day';
BEGIN
  EXECUTE format('ALTER TABLE occurrences ATTACH PARTITION occurrences_first FOR VALUES FROM (MINVALUE) TO (%L)', tomorrow);
  FOR d IN 0..1 LOOP
    EXECUTE format(
      'CREATE TABLE %I PARTITION OF occurrences FOR VALUES FROM (%L) TO (%L)
         WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02,
               vacuum_index_cleanup = on)',
      'occurrences_' || to_char((tomorrow + d * interval '1 day') AT TIME ZONE 'UTC', 'YYYYMMDD"t"HH24MISS'),
      tomorrow + d * interval '1 day', tomorrow + (d + 1) * interval '1 day');
  END LOOP;
END
$$;
CREATE TABLE occurrences_default PARTITION OF occurrences DEFAULT
  WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02, vacuum_index_cleanup = on);
