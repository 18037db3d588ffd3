-- Version 16: credentials by role and the audit log (docs/operating-onsetd.md, "Credentials and
-- roles"). A token is kept by name with its role and the SHA-256 of its secret, never the secret;
-- a revoked one keeps its row (revoked_at set), so that its name is never taken again. The
-- coordinator's token file is not here: it is read at start, an admin token named
-- 'onsetd.token'.
CREATE TABLE access_tokens (
  id            INTEGER PRIMARY KEY,
  name          TEXT    NOT NULL UNIQUE,
  role          TEXT    NOT NULL CHECK (role IN ('read', 'worker', 'submit', 'admin')),
  secret_sha256 TEXT    NOT NULL UNIQUE,
  created_at    INTEGER NOT NULL,
  created_by    TEXT    NOT NULL,
  revoked_at    INTEGER,
  revoked_by    TEXT
) STRICT;

-- Who changed a study or the coordinator's access, when, from where: the newest 100,000 entries
-- (older ones are deleted as new ones come). study is '' for an action about no one study.
CREATE TABLE audit_log (
  id          INTEGER PRIMARY KEY,
  at_unix_ms  INTEGER NOT NULL,
  token_name  TEXT    NOT NULL,
  role        TEXT    NOT NULL,
  peer        TEXT    NOT NULL,
  action      TEXT    NOT NULL,
  study       TEXT    NOT NULL,
  detail      TEXT    NOT NULL
) STRICT;
CREATE INDEX audit_log_by_study ON audit_log (study, id);
