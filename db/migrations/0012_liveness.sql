-- Version 12: one row that onsetd rewrites every few seconds (--health-interval-ms) to learn
-- whether it can still write its database (a full disk, a lock another program holds); the
-- standard gRPC health service reports the answer. Nothing reads it.
CREATE TABLE liveness (
  id         INTEGER PRIMARY KEY CHECK (id = 1),
  at_unix_ms INTEGER NOT NULL
) STRICT;
