-- The leader's resync reads edited schedules in (updated_at, id) order with a keyset on both
-- (scheduleListChangedSince): thousands of rows inserted by one statement share one updated_at, and
-- a cursor on the time alone re-read the same first page on every pass. This index serves that order
-- without sorting every row of a shared instant on each pass.
DROP INDEX schedules_updated_idx;
CREATE INDEX schedules_updated_idx ON schedules (updated_at, id);
