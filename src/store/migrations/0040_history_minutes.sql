-- The dashboard's charts (GET /v1/history, three hours read every 30 s) counted every job, attempt
-- and occurrence of the window at each read: at the source document's 500 jobs a second that is 5.4
-- million of each, ~16 s of database time a read. The maintenance role now rolls each minute up
-- once it is settled (store/history-rollup.ts), and a read takes the rolled minutes from here and
-- only the minutes after them from the rows.

-- Per minute, queue and tenant: jobs succeeded and attempts failed in the minute, and the jobs due
-- and not started at its end. A (minute, queue, tenant) with all three zero has no row.
CREATE TABLE history_minutes (
  minute    timestamptz NOT NULL,
  queue     text NOT NULL,
  tenant_id text NOT NULL,
  succeeded integer NOT NULL DEFAULT 0,
  failed    integer NOT NULL DEFAULT 0,
  waiting   integer NOT NULL DEFAULT 0,
  PRIMARY KEY (minute, queue, tenant_id)
);

-- Per minute of fire time: the scheduled occurrences' count and exact lateness percentiles, for each
-- tenant and, under tenant_id '' (no tenant id is empty), for all of them: percentiles do not add up.
CREATE TABLE lag_minutes (
  minute    timestamptz NOT NULL,
  tenant_id text NOT NULL,
  scheduled integer NOT NULL,
  p50_s     double precision NOT NULL,
  p99_s     double precision NOT NULL,
  PRIMARY KEY (minute, tenant_id)
);

-- The minutes each table holds: those starting in [since, upto). A read whose window starts before
-- `since` counts its rows as before. Both start at this migration's minute; rolls go forward from
-- `upto` as minutes settle, and back from `since` down to `back_to`: a day before this migration
-- (the longest window) where the database already held jobs or occurrences, else nowhere.
CREATE TABLE history_rolled (
  one        boolean PRIMARY KEY DEFAULT true CHECK (one),
  jobs_since timestamptz NOT NULL,
  jobs_upto  timestamptz NOT NULL,
  lag_since  timestamptz NOT NULL,
  lag_upto   timestamptz NOT NULL,
  back_to    timestamptz NOT NULL
);
INSERT INTO history_rolled (jobs_since, jobs_upto, lag_since, lag_upto, back_to)
SELECT m, m, m, m,
       CASE WHEN EXISTS (SELECT FROM jobs) OR EXISTS (SELECT FROM occurrences) THEN m - interval '1 day' ELSE m END
  FROM date_trunc('minute', now()) m;
