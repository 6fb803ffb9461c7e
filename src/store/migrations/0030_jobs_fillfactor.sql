-- New job rows go to pages with room to spare, not into the few hundred bytes left at the end of
-- every full page of history. With every page full, a new job (~200 bytes) still fitted into each
-- old page's leftover space, so a batch of 1,000 new jobs lay on 1,000 pages spread over the whole
-- table: beside 2 million finished jobs a drain of 50,000 ran at 0.30x the rate beside 100,000,
-- and at 1.07x with room kept free (npm run bench history). An insert now needs a tenth of a page
-- free besides its row; the claim's and the completion's new versions of the row use that room on
-- the same page.
ALTER TABLE jobs SET (fillfactor = 90);
