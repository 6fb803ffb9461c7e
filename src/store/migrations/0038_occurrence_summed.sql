-- A due slice of the ledger is summed into the lateness rollups in steps of fire time, each its own
-- short transaction, before it is dropped (store/occurrence-slices.ts): one statement over a day's
-- slice held a core for its whole length (about two minutes at the source document's rate), and the
-- p99 of enqueue → start read 4x while it ran.
--
-- `before`: every occurrence in a slice (not the default partition) that fired before it is in the
-- rollups already, so the readers that add the ledger to the rollups leave those rows out. Steps
-- walk the slices oldest first, so one value covers every slice summed so far.
CREATE TABLE occurrence_summed (
  one    boolean PRIMARY KEY DEFAULT true CHECK (one),
  before timestamptz NOT NULL
);
INSERT INTO occurrence_summed (before) VALUES ('-infinity');

-- On the slice being summed only (created by its first step, dropped with it): a backfill writing a
-- fire time the steps have passed adds the row to the rollups itself. A step locks the slice against
-- writes while it sums, so such a write comes after the step committed and reads its `before`. The
-- sums are those of rollupSums (store/occurrence-rollup.ts) for one row.
CREATE FUNCTION tidemark_occurrence_summed_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  tenant text := coalesce((SELECT s.tenant_id FROM schedules s WHERE s.id = NEW.schedule_id), '');
  scheduled boolean := NEW.state = 'enqueued' AND NEW.source = 'schedule' AND NOT NEW.backfill;
  lag float8 := greatest(0, date_part('epoch', NEW.materialised_at - NEW.fire_at));
  triggered int := (NEW.state = 'enqueued' AND NOT scheduled)::int;
  skipped int := (NEW.state = 'skipped')::int;
  missed int := (NEW.state = 'missed')::int;
  late int := (scheduled AND lag > 2)::int;
  lag_sum float8 := CASE WHEN scheduled THEN lag ELSE 0 END;
BEGIN
  IF NEW.fire_at >= (SELECT before FROM occurrence_summed) THEN
    RETURN NULL;
  END IF;
  INSERT INTO occurrence_minutes AS r (minute, tenant_id, scheduled, triggered, skipped, missed, late, lag_sum_s, lag_max_s)
  VALUES (date_trunc('minute', NEW.fire_at), tenant, scheduled::int, triggered, skipped, missed, late, lag_sum, lag_sum)
  ON CONFLICT (minute, tenant_id) DO UPDATE SET
    scheduled = r.scheduled + EXCLUDED.scheduled, triggered = r.triggered + EXCLUDED.triggered,
    skipped = r.skipped + EXCLUDED.skipped, missed = r.missed + EXCLUDED.missed, late = r.late + EXCLUDED.late,
    lag_sum_s = r.lag_sum_s + EXCLUDED.lag_sum_s, lag_max_s = greatest(r.lag_max_s, EXCLUDED.lag_max_s);
  INSERT INTO occurrence_days AS r (schedule_id, day, tenant_id, scheduled, triggered, skipped, missed, late, lag_sum_s, lag_max_s)
  VALUES (NEW.schedule_id, date_trunc('day', NEW.fire_at, 'UTC'), tenant, scheduled::int, triggered, skipped, missed,
          late, lag_sum, lag_sum)
  ON CONFLICT (schedule_id, day) DO UPDATE SET
    scheduled = r.scheduled + EXCLUDED.scheduled, triggered = r.triggered + EXCLUDED.triggered,
    skipped = r.skipped + EXCLUDED.skipped, missed = r.missed + EXCLUDED.missed, late = r.late + EXCLUDED.late,
    lag_sum_s = r.lag_sum_s + EXCLUDED.lag_sum_s, lag_max_s = greatest(r.lag_max_s, EXCLUDED.lag_max_s);
  RETURN NULL;
END
$$;
