-- Version 7: whether a queued cell may be claimed as far as its role goes, kept with the cell so
-- that a lease finds the first claimable cell by walking an index instead of testing every
-- waiting WSD branch: 1 for every cell but a branch whose trunk has not yet reported the
-- checkpoint it starts from (checkpoint/bytes at its branch_tokens). The coordinator sets it
-- when the trunk reports that point, and clears it when the trunk's metrics are forgotten
-- (onset rerun --fresh of the trunk).
ALTER TABLE cells ADD COLUMN ready INTEGER NOT NULL DEFAULT 1;
UPDATE cells SET ready = EXISTS (SELECT 1 FROM metrics m WHERE m.cell_id = cells.trunk_id
                                 AND m.name = 'checkpoint/bytes'
                                 AND m.tokens = cells.branch_tokens)
  WHERE role = 'branch';
CREATE INDEX cells_claimable ON cells (state, ready, id);
