-- The slices of succeeded jobs behind the newest two, each with when a job last finished into one
-- (to the minute). Jobs finish into the newest slices, those of recent ids; an older slice takes one
-- only for a job made long before (scheduled far ahead, a dead job re-run, a workflow node whose
-- id was drawn at submit). A read of recent finishes takes the newest slices and, of these, only
-- the ones a job finished into since it starts. Probing every slice's finished_at index took ~3
-- pages a slice: 159 pages a read beside 35 slices, against 65 on a database without history.
CREATE TABLE job_slices_past (
  name text PRIMARY KEY,
  from_id bigint NOT NULL,
  to_id bigint NOT NULL,
  finished_at timestamptz NOT NULL
);

-- Row by row, as a job moved into a slice by an UPDATE fires no statement trigger of the slice. Once
-- a minute at most, so jobs finishing into one slice side by side wait on its row that often only.
CREATE FUNCTION tidemark_job_slice_finished() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE job_slices_past SET finished_at = now()
   WHERE name = TG_TABLE_NAME AND finished_at < now() - interval '1 minute';
  RETURN NULL;
END
$$;
