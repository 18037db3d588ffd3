-- Version 9: a worker that exits cleanly says so (DeregisterWorker), so that `onset workers`
-- lists the live ones. NULL: it has not (it runs, or died without saying).
ALTER TABLE workers ADD COLUMN exited_at INTEGER;
