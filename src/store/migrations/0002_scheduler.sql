-- Scheduler: occurrence ledger and lease changes (issue 4).

-- Trigger-now creates an occurrence through the same path as a scheduled one, but its instant is
-- "whenever someone pressed the button", which may equal a scheduled fire time to the microsecond.
-- So uniqueness on (schedule, fire time) holds for scheduled occurrences only; triggered ones are
-- unique by their row id and job key.
ALTER TABLE occurrences
  ADD COLUMN source text NOT NULL DEFAULT 'schedule' CHECK (source IN ('schedule', 'trigger'));
ALTER TABLE occurrences DROP CONSTRAINT occurrences_schedule_id_fire_at_key;
CREATE UNIQUE INDEX occurrences_scheduled_key ON occurrences (schedule_id, fire_at) WHERE source = 'schedule';
CREATE INDEX occurrences_triggered_idx ON occurrences (schedule_id, fire_at) WHERE source = 'trigger';
-- The schedule version the occurrence was decided under: an edit between two occurrences shows.
ALTER TABLE occurrences ADD COLUMN schedule_version integer;

-- When the current holder took the lease; expires_at alone does not say how long a term has run.
ALTER TABLE leases ADD COLUMN acquired_at timestamptz;

-- The leader's periodic resync reads only schedules edited since its last pass.
CREATE INDEX schedules_updated_idx ON schedules (updated_at);

-- The overlap policy asks "is this schedule's previous job still queued or running?" per due
-- schedule; without this it is a scan of the whole job history.
CREATE INDEX jobs_schedule_active_idx ON jobs (schedule_id, state)
  WHERE schedule_id IS NOT NULL AND state IN ('scheduled', 'available', 'running');

-- Every edit that can change what or when a schedule fires bumps its version; the leader hears of it
-- at once through this channel (payload: the schedule id) instead of waiting for the resync. The
-- leader's own advance of next_fire_at does not bump the version and so does not notify: at 30,000
-- schedules a minute that would be 500 notifications a second the leader sends to itself.
CREATE FUNCTION tidemark_schedule_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM pg_notify('tidemark_schedules', OLD.id::text);
    RETURN OLD;
  END IF;
  PERFORM pg_notify('tidemark_schedules', NEW.id::text);
  RETURN NEW;
END
$$;
CREATE TRIGGER schedules_notify_insert AFTER INSERT ON schedules
  FOR EACH ROW EXECUTE FUNCTION tidemark_schedule_notify();
CREATE TRIGGER schedules_notify_delete AFTER DELETE ON schedules
  FOR EACH ROW EXECUTE FUNCTION tidemark_schedule_notify();
CREATE TRIGGER schedules_notify_update AFTER UPDATE ON schedules
  FOR EACH ROW WHEN (OLD.version IS DISTINCT FROM NEW.version OR OLD.paused IS DISTINCT FROM NEW.paused)
  EXECUTE FUNCTION tidemark_schedule_notify();
