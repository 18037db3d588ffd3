-- Version 15: backups that know they are backups, and restores that cannot run a cell twice
-- (db/instance.h, docs/operating-onsetd.md "Backup and restore").
--
-- What this database file is. `generation` counts the restores in its history: a coordinator
-- that first serves a backup's copy starts a new generation, whose attempts are numbered apart
-- from every earlier one's and whose claims wait until the workers of the lost timeline have
-- stopped. The backup_* columns are set in the copy by the program that wrote it and cleared by
-- the coordinator that first serves it.
CREATE TABLE instance (
  id                        INTEGER PRIMARY KEY CHECK (id = 1),
  generation                INTEGER NOT NULL DEFAULT 1 CHECK (generation >= 1),
  backup_taken_unix_ms      INTEGER,
  backup_source             TEXT    NOT NULL DEFAULT '',
  restored_unix_ms          INTEGER,
  restored_from_taken_unix_ms INTEGER,
  restored_from_source      TEXT    NOT NULL DEFAULT '',
  claims_from_unix_ms       INTEGER NOT NULL DEFAULT 0
) STRICT;
INSERT INTO instance (id) VALUES (1);

-- The rotating backups (--backup-every) that this database's coordinator wrote: the rotation
-- deletes a file only when it is one of these, is still the file it wrote (device and inode),
-- and no coordinator has served it since.
CREATE TABLE backups (
  path          TEXT    PRIMARY KEY,
  device        INTEGER NOT NULL,
  inode         INTEGER NOT NULL,
  bytes         INTEGER NOT NULL,
  taken_unix_ms INTEGER NOT NULL
) STRICT;

-- The generation an attempt was claimed in.
ALTER TABLE attempts ADD COLUMN generation INTEGER NOT NULL DEFAULT 1;
