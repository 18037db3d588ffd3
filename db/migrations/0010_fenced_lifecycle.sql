-- Version 10: one attempt at a time, by construction (coordinator/cells/cell_lifecycle.h,
-- docs/operating-onsetd.md).
--
-- A cell's pending intent: cancel and rerun of a running cell are carried out when its open
-- attempt ends, so that the cell never runs twice at once; '_fresh' when a fresh rerun (a new
-- lineage) is pending too. '' when none.
ALTER TABLE cells ADD COLUMN intent TEXT NOT NULL DEFAULT ''
  CHECK (intent IN ('', 'cancel', 'rerun', 'rerun_fresh', 'cancel_fresh'));
-- The run the cell's points and checkpoints belong to; `onset rerun --fresh` starts a new one.
ALTER TABLE cells ADD COLUMN lineage INTEGER NOT NULL DEFAULT 1 CHECK (lineage >= 1);
-- The lineage an attempt ran in.
ALTER TABLE attempts ADD COLUMN lineage INTEGER NOT NULL DEFAULT 1;
-- Whether its worker ever called for it after the claim: a lease that expires without a word
-- from its worker (the reply to the claim never arrived) costs the cell no counted failure.
-- Attempts from before this version count as contacted.
ALTER TABLE attempts ADD COLUMN contacted INTEGER NOT NULL DEFAULT 1 CHECK (contacted IN (0, 1));
-- 1: the attempt wrote its checkpoints into a directory of its own (CELLDIR/attempt-N), never
-- touched by another attempt; 0 (attempts from before this version): into the cell's directory.
ALTER TABLE attempts ADD COLUMN own_checkpoint_dir INTEGER NOT NULL DEFAULT 0
  CHECK (own_checkpoint_dir IN (0, 1));
-- The most tokens a point of the attempt may claim: its cell's budget plus one step and one
-- evaluation interval; 0: no bound (attempts from before this version).
ALTER TABLE attempts ADD COLUMN max_tokens INTEGER NOT NULL DEFAULT 0;
-- Where the attempt's trainer actually started, as it reported (tokens of the checkpoint it
-- resumed, 0 from scratch); NULL until it said.
ALTER TABLE attempts ADD COLUMN started_at_tokens INTEGER;
-- A worker proves who it is with the secret it was given at registration; only a hash is kept.
-- '' for workers registered before this version: they are told to register again.
ALTER TABLE workers ADD COLUMN secret_sha256 TEXT NOT NULL DEFAULT '';

-- `onset logs CELL` without a study finds the cell by a prefix of its id in any study: a range
-- of this index, not a scan of every cell.
CREATE INDEX cells_by_hash ON cells (hash);

-- Rows left by earlier versions that break the rules above. An attempt that is open but not its
-- cell's latest was superseded by a rerun while it ran: it ends, lost.
UPDATE attempts SET ended_at = CAST(strftime('%s', 'now') AS INTEGER) * 1000, outcome = 'lost',
                    failure_class = 'unconfirmed',
                    reason = 'superseded by a later attempt of its cell (before version 10)'
  WHERE ended_at IS NULL AND attempt < (SELECT MAX(a.attempt) FROM attempts a
                                        WHERE a.cell_id = attempts.cell_id);
-- A cell with an open attempt is running; a cancel or rerun recorded meanwhile becomes its
-- intent.
UPDATE cells SET intent = CASE state WHEN 'cancelled' THEN 'cancel' ELSE 'rerun' END,
                 state = 'running'
  WHERE state <> 'running'
    AND EXISTS (SELECT 1 FROM attempts a WHERE a.cell_id = cells.id AND a.ended_at IS NULL);
-- A running cell without an open attempt waits in the queue.
UPDATE cells SET state = 'queued'
  WHERE state = 'running'
    AND NOT EXISTS (SELECT 1 FROM attempts a WHERE a.cell_id = cells.id AND a.ended_at IS NULL);
-- The next attempt's starting point is now named by the coordinator (the newest checkpoint the
-- cell's lineage recorded, none after a fresh rerun), so the flag the worker acted on goes.
ALTER TABLE cells DROP COLUMN fresh;
