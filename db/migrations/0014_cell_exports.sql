-- Version 14: a cell's exports (`onset export-model`), as the client that wrote them reported
-- them: where (host and path), in which format, how large, of which checkpoint. The files live
-- wherever the client ran; these rows say where to look (`onset artifacts`).
CREATE TABLE cell_exports (
  id          INTEGER PRIMARY KEY,
  cell_id     INTEGER NOT NULL REFERENCES cells(id),
  format      TEXT    NOT NULL,
  host        TEXT    NOT NULL,
  path        TEXT    NOT NULL,
  bytes       INTEGER NOT NULL,
  tokens      INTEGER NOT NULL,
  at_unix_ms  INTEGER NOT NULL
) STRICT;
CREATE INDEX cell_exports_by_cell ON cell_exports (cell_id, id);
