-- Version 13: a study's tags (`tags: [...]` in its file), to find a lab's studies by them
-- (`onset status --tag T`). Tags only grow: a resubmission adds the ones that are new.
CREATE TABLE study_tags (
  study_id INTEGER NOT NULL REFERENCES studies(id),
  tag      TEXT    NOT NULL,
  PRIMARY KEY (study_id, tag)
) STRICT, WITHOUT ROWID;
CREATE INDEX study_tags_by_tag ON study_tags (tag);
