-- A tenth of each page stays free for the claim's and the completion's new versions of its rows,
-- and an insert goes only to a page with that tenth free besides its row. Full pages of history
-- kept a few hundred bytes at their end, enough for a new job (~200 bytes): a claim of 1,000 new
-- jobs beside 2 million finished ones read 1,000 pages spread over the table.
ALTER TABLE jobs SET (fillfactor = 90);
