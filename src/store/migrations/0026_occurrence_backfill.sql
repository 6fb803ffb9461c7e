-- Backfill (issue 19): an operator asks a schedule to run its fire times in a past range. Those
-- occurrences are scheduled ones (source 'schedule'), so the unique key (schedule_id, fire_at) of
-- occurrences_scheduled_key holds between them and the scheduler's own: a fire time is decided once,
-- by whichever writes it first. This flag sets them apart where it matters: their lateness is the age
-- of the range, not the scheduler's delay, so the lag histogram, the lateness rollups and the history
-- charts leave them out (a backfill of last week must not page anyone about schedule lag).
-- A constant default: no table rewrite, the column is only catalogue until a row sets it.
ALTER TABLE occurrences ADD COLUMN backfill boolean NOT NULL DEFAULT false;
