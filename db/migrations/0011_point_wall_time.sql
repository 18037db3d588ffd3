-- Version 11: the wall-clock time each metric point was measured, in milliseconds since the
-- Unix epoch, as the trainer's clock read it (base/metrics_line.h). NULL: not known (points
-- stored before this version, and those of trainers that do not say).
ALTER TABLE metrics ADD COLUMN at_unix_ms INTEGER;
