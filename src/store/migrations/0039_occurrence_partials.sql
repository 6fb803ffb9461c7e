-- What a slice summed in steps (store/occurrence-slices.ts) adds to the rollups builds up here first.
-- The minutes of a step that ends inside a minute wait for the step that ends it: at the source
-- document's rate a minute is 30,000 occurrences, where a step holds ~2,500, and a minute summed in
-- two parts would read as two in historyLagPerMinute. The days wait for the drop: a step meets every
-- schedule that fired in its few seconds, and at 30,000 every-minute schedules writing them to
-- occurrence_days updated one logged row per occurrence. Unlogged: a crash empties these tables;
-- the steps then start again from the last whole minute, and the drop sums the slice's days from
-- its rows in one statement.
CREATE UNLOGGED TABLE occurrence_minute_partials (LIKE occurrence_minutes INCLUDING DEFAULTS, PRIMARY KEY (minute, tenant_id));
-- Each step updates a day row of every schedule it meets, ~43 million updates a day at the source's
-- rate on 30,000 rows: with room on each page they stay heap-only (at the default fillfactor 7 % did,
-- and the table held 20× its live rows after 600,000 updates).
CREATE UNLOGGED TABLE occurrence_day_partials (LIKE occurrence_days INCLUDING DEFAULTS, PRIMARY KEY (schedule_id, day))
  WITH (fillfactor = 50);

-- What the partials hold of `slice`: the minute partials its rows from occurrence_summed.before up
-- to `upto`; the day partials its rows from `days_from` up to `upto` (null: none, since a crash).
CREATE UNLOGGED TABLE occurrence_partials_span (
  one       boolean PRIMARY KEY DEFAULT true CHECK (one),
  slice     text NOT NULL,
  upto      timestamptz NOT NULL,
  days_from timestamptz
);

-- `days_before`: every occurrence in a slice that fired before it is in occurrence_days, as `before`
-- says for occurrence_minutes. It moves when a slice is dropped. Until this migration the steps
-- wrote both rollups, so a slice part-summed now has its days counted up to `before`.
ALTER TABLE occurrence_summed ADD COLUMN days_before timestamptz;
UPDATE occurrence_summed SET days_before = before;
ALTER TABLE occurrence_summed ALTER COLUMN days_before SET NOT NULL;

-- A backfill of a fire time the steps have passed counts itself where the steps put its neighbours:
-- into a rollup below `before` (minute) and `days_before` (day), else into the partials while they
-- hold its fire time, else nowhere (a crash emptied them: the steps or the drop read the row).
CREATE OR REPLACE FUNCTION tidemark_occurrence_summed_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  tenant text := coalesce((SELECT s.tenant_id FROM schedules s WHERE s.id = NEW.schedule_id), '');
  scheduled boolean := NEW.state = 'enqueued' AND NEW.source = 'schedule' AND NOT NEW.backfill;
  lag float8 := greatest(0, date_part('epoch', NEW.materialised_at - NEW.fire_at));
  lag_sum float8 := CASE WHEN scheduled THEN lag ELSE 0 END;
  -- The rollup columns after the key, and how a row already there adds a new one's (rollupUpsert,
  -- store/occurrence-rollup.ts).
  sums text := 'scheduled, triggered, skipped, missed, late, lag_sum_s, lag_max_s';
  adds text := 'scheduled = r.scheduled + EXCLUDED.scheduled, triggered = r.triggered + EXCLUDED.triggered,
    skipped = r.skipped + EXCLUDED.skipped, missed = r.missed + EXCLUDED.missed, late = r.late + EXCLUDED.late,
    lag_sum_s = r.lag_sum_s + EXCLUDED.lag_sum_s, lag_max_s = greatest(r.lag_max_s, EXCLUDED.lag_max_s)';
  summed occurrence_summed;
  held boolean;
  days_held boolean;
  minutes text;
  days text;
BEGIN
  SELECT * INTO summed FROM occurrence_summed;
  SELECT NEW.fire_at < p.upto, NEW.fire_at < p.upto AND p.days_from = summed.days_before
    INTO held, days_held
    FROM occurrence_partials_span p WHERE p.slice = TG_TABLE_NAME;
  minutes := CASE WHEN NEW.fire_at < summed.before THEN 'occurrence_minutes'
                  WHEN held THEN 'occurrence_minute_partials' END;
  days := CASE WHEN NEW.fire_at < summed.days_before THEN 'occurrence_days'
               WHEN days_held THEN 'occurrence_day_partials' END;
  IF minutes IS NOT NULL THEN
    EXECUTE format('INSERT INTO %I AS r (minute, tenant_id, %s) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)
                    ON CONFLICT (minute, tenant_id) DO UPDATE SET %s', minutes, sums, adds)
      USING date_trunc('minute', NEW.fire_at), tenant, scheduled::int, (NEW.state = 'enqueued' AND NOT scheduled)::int,
            (NEW.state = 'skipped')::int, (NEW.state = 'missed')::int, (scheduled AND lag > 2)::int, lag_sum;
  END IF;
  IF days IS NOT NULL THEN
    EXECUTE format('INSERT INTO %I AS r (schedule_id, day, tenant_id, %s) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
                    ON CONFLICT (schedule_id, day) DO UPDATE SET %s', days, sums, adds)
      USING NEW.schedule_id, date_trunc('day', NEW.fire_at, 'UTC'), tenant, scheduled::int,
            (NEW.state = 'enqueued' AND NOT scheduled)::int, (NEW.state = 'skipped')::int,
            (NEW.state = 'missed')::int, (scheduled AND lag > 2)::int, lag_sum;
  END IF;
  RETURN NULL;
END
$$;
