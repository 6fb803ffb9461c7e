-- GET /v1/lateness (per minute, a day by default) counted every occurrence of its window from the
-- ledger: at the source document's 500 a second, 43 million rows for a day. lag_minutes now keeps
-- every count and sum that read returns, so its rolled minutes come from here as the charts' do
-- (store/history-rollup.ts). Occurrences asked for by a person (trigger-now, backfill) into a minute
-- already rolled add themselves in the statement that writes them (occurrenceMaterialise).
ALTER TABLE lag_minutes
  ADD COLUMN triggered integer NOT NULL DEFAULT 0,
  ADD COLUMN skipped   integer NOT NULL DEFAULT 0,
  ADD COLUMN missed    integer NOT NULL DEFAULT 0,
  ADD COLUMN late      integer NOT NULL DEFAULT 0,
  ADD COLUMN lag_sum_s double precision NOT NULL DEFAULT 0,
  ADD COLUMN lag_max_s double precision NOT NULL DEFAULT 0;

-- The minutes rolled so far lack the new columns: they are rolled again, back to a day from here
-- (history_rolled.back_to bounds it as before), and read from the rows until then.
DELETE FROM lag_minutes;
UPDATE history_rolled SET lag_since = date_trunc('minute', now()), lag_upto = date_trunc('minute', now());
