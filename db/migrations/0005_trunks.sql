-- Version 5: WSD trunks and branches (docs/schema.md). A trunk is a row of cells like any other
-- (so leases, retries, backoff, cancel and requeue work for it unchanged) but not a grid point:
-- it trains the shared stable phase of its branches up to its tokens_budget, and its
-- config_json is a trunk spec (model/config/wsd_trunk.h). A branch is a grid point that starts
-- from its trunk's checkpoint at branch_tokens. Every existing row is a cell that runs alone.
ALTER TABLE cells ADD COLUMN role TEXT NOT NULL DEFAULT 'cell'
  CHECK (role IN ('cell', 'trunk', 'branch'));
-- role 'branch': the trunk row it starts from, and that checkpoint's tokens.
ALTER TABLE cells ADD COLUMN trunk_id INTEGER REFERENCES cells(id);
ALTER TABLE cells ADD COLUMN branch_tokens INTEGER NOT NULL DEFAULT 0;
-- Why the cell ended without an attempt of its own (a branch whose trunk ended for good); ''
-- otherwise, and cleared when the cell is queued again. Shown as the cell's last error and as
-- the reason of its state change.
ALTER TABLE cells ADD COLUMN note TEXT NOT NULL DEFAULT '';

-- A trunk's branches (ending the waiting ones when it ends for good).
CREATE INDEX cells_by_trunk ON cells (trunk_id) WHERE trunk_id IS NOT NULL;
-- The study's counts per state leave trunks out: still a covering scan.
DROP INDEX cells_by_study_state;
CREATE INDEX cells_by_study_state ON cells (study_id, state, role);

-- As in version 3, but a cell's note, when it has one, is the reason of its state change.
DROP TRIGGER cell_state_changed;
CREATE TRIGGER cell_state_changed AFTER UPDATE OF state ON cells
WHEN NEW.state IS NOT OLD.state
BEGIN
  INSERT INTO cell_events (study_id, cell_id, old_state, new_state, at, attempt, worker_id,
                           reason)
  VALUES (NEW.study_id, NEW.id, OLD.state, NEW.state, NEW.updated_at,
          COALESCE((SELECT MAX(attempt) FROM attempts WHERE cell_id = NEW.id), 0),
          COALESCE((SELECT worker_id FROM attempts WHERE cell_id = NEW.id
                    ORDER BY attempt DESC LIMIT 1), ''),
          CASE WHEN NEW.note <> '' THEN NEW.note
          ELSE COALESCE((SELECT reason FROM attempts WHERE cell_id = NEW.id
                         AND ended_at IS NOT NULL AND outcome <> 'succeeded' AND attempt =
                             (SELECT MAX(attempt) FROM attempts WHERE cell_id = NEW.id)), '')
          END);
END;
