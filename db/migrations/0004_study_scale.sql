-- Version 4: reads of one study proportional to what they return, whatever the study's size
-- (100,000 cells and more).
--
-- A study's cells in queue order, a page at a time (GetStudy, GetResults, the watch snapshot):
-- an index on study_id is ordered by (study_id, rowid), so "study_id = ? AND id > ? ORDER BY id
-- LIMIT n" reads n rows instead of sorting the whole study.
CREATE INDEX cells_by_study ON cells (study_id);
-- The study's counts per state (every study summary): a covering scan, no sort.
CREATE INDEX cells_by_study_state ON cells (study_id, state);
-- The model's size and training FLOPs per token (model/config/flops.h), computed when the cell is
-- stored, so that showing a cell never parses its config. NULL for cells stored before this
-- version: those are computed from config_json when read.
ALTER TABLE cells ADD COLUMN non_embedding_params INTEGER;
ALTER TABLE cells ADD COLUMN train_flops_per_token REAL;
