-- The day rollup's share of a slice summed in steps (store/occurrence-slices.ts) builds up here and
-- goes into occurrence_days in the drop's transaction. A step spans a few seconds of fire time and
-- meets every schedule firing in them: written into occurrence_days, each (schedule, day) row was
-- updated once a step, which at the source document's rate (30,000 every-minute schedules) is one
-- logged row update per occurrence summed. Unlogged: a crash empties both tables, and the drop then
-- sums the slice's days from its rows in one statement.
CREATE UNLOGGED TABLE occurrence_day_partials (
  schedule_id uuid NOT NULL,
  day         timestamptz NOT NULL,
  tenant_id   text NOT NULL,
  scheduled   bigint NOT NULL DEFAULT 0,
  triggered   bigint NOT NULL DEFAULT 0,
  skipped     bigint NOT NULL DEFAULT 0,
  missed      bigint NOT NULL DEFAULT 0,
  late        bigint NOT NULL DEFAULT 0,
  lag_sum_s   double precision NOT NULL DEFAULT 0,
  lag_max_s   double precision NOT NULL DEFAULT 0,
  PRIMARY KEY (schedule_id, day)
);

-- What the partials hold: the rows of `slice` that fired in [from, upto). No row: nothing (before a
-- slice's first step, or after a crash).
CREATE UNLOGGED TABLE occurrence_day_partials_span (
  one   boolean PRIMARY KEY DEFAULT true CHECK (one),
  slice text NOT NULL,
  "from" timestamptz NOT NULL,
  upto  timestamptz NOT NULL
);

-- `days_before`: every occurrence in a slice that fired before it is in occurrence_days, as `before`
-- says for occurrence_minutes. It moves when a slice is dropped. Until this migration the steps
-- wrote both rollups, so a slice part-summed now has its days counted up to `before`.
ALTER TABLE occurrence_summed ADD COLUMN days_before timestamptz;
UPDATE occurrence_summed SET days_before = before;
ALTER TABLE occurrence_summed ALTER COLUMN days_before SET NOT NULL;

-- A backfill of a fire time the steps have passed: its minute goes into occurrence_minutes as
-- before, its day into the partials while they hold its fire time (into occurrence_days below
-- days_before; nowhere when a crash emptied the partials, whose drop then reads the row itself).
CREATE OR REPLACE FUNCTION tidemark_occurrence_summed_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  tenant text := coalesce((SELECT s.tenant_id FROM schedules s WHERE s.id = NEW.schedule_id), '');
  scheduled boolean := NEW.state = 'enqueued' AND NEW.source = 'schedule' AND NOT NEW.backfill;
  lag float8 := greatest(0, date_part('epoch', NEW.materialised_at - NEW.fire_at));
  triggered int := (NEW.state = 'enqueued' AND NOT scheduled)::int;
  skipped int := (NEW.state = 'skipped')::int;
  missed int := (NEW.state = 'missed')::int;
  late int := (scheduled AND lag > 2)::int;
  lag_sum float8 := CASE WHEN scheduled THEN lag ELSE 0 END;
  summed occurrence_summed;
BEGIN
  SELECT * INTO summed FROM occurrence_summed;
  IF NEW.fire_at >= summed.before THEN
    RETURN NULL;
  END IF;
  INSERT INTO occurrence_minutes AS r (minute, tenant_id, scheduled, triggered, skipped, missed, late, lag_sum_s, lag_max_s)
  VALUES (date_trunc('minute', NEW.fire_at), tenant, scheduled::int, triggered, skipped, missed, late, lag_sum, lag_sum)
  ON CONFLICT (minute, tenant_id) DO UPDATE SET
    scheduled = r.scheduled + EXCLUDED.scheduled, triggered = r.triggered + EXCLUDED.triggered,
    skipped = r.skipped + EXCLUDED.skipped, missed = r.missed + EXCLUDED.missed, late = r.late + EXCLUDED.late,
    lag_sum_s = r.lag_sum_s + EXCLUDED.lag_sum_s, lag_max_s = greatest(r.lag_max_s, EXCLUDED.lag_max_s);
  IF NEW.fire_at < summed.days_before THEN
    INSERT INTO occurrence_days AS r (schedule_id, day, tenant_id, scheduled, triggered, skipped, missed, late, lag_sum_s, lag_max_s)
    VALUES (NEW.schedule_id, date_trunc('day', NEW.fire_at, 'UTC'), tenant, scheduled::int, triggered, skipped, missed,
            late, lag_sum, lag_sum)
    ON CONFLICT (schedule_id, day) DO UPDATE SET
      scheduled = r.scheduled + EXCLUDED.scheduled, triggered = r.triggered + EXCLUDED.triggered,
      skipped = r.skipped + EXCLUDED.skipped, missed = r.missed + EXCLUDED.missed, late = r.late + EXCLUDED.late,
      lag_sum_s = r.lag_sum_s + EXCLUDED.lag_sum_s, lag_max_s = greatest(r.lag_max_s, EXCLUDED.lag_max_s);
  ELSIF EXISTS (SELECT 1 FROM occurrence_day_partials_span p
                 WHERE p.slice = TG_TABLE_NAME AND p."from" = summed.days_before AND NEW.fire_at < p.upto) THEN
    INSERT INTO occurrence_day_partials AS r (schedule_id, day, tenant_id, scheduled, triggered, skipped, missed, late, lag_sum_s, lag_max_s)
    VALUES (NEW.schedule_id, date_trunc('day', NEW.fire_at, 'UTC'), tenant, scheduled::int, triggered, skipped, missed,
            late, lag_sum, lag_sum)
    ON CONFLICT (schedule_id, day) DO UPDATE SET
      scheduled = r.scheduled + EXCLUDED.scheduled, triggered = r.triggered + EXCLUDED.triggered,
      skipped = r.skipped + EXCLUDED.skipped, missed = r.missed + EXCLUDED.missed, late = r.late + EXCLUDED.late,
      lag_sum_s = r.lag_sum_s + EXCLUDED.lag_sum_s, lag_max_s = greatest(r.lag_max_s, EXCLUDED.lag_max_s);
  END IF;
  RETURN NULL;
END
$$;
