-- Version 8: what bounds the workers table. A registration that finds it full forgets the
-- workers seen least recently that never ran an attempt (a worker with attempts stays: they
-- name it). attempts_by_worker answers "did it run anything" (and SQLite's foreign-key check
-- when a worker row is deleted) without scanning every attempt; workers_by_last_seen finds the
-- stalest first, and orders `onset workers`.
CREATE INDEX attempts_by_worker ON attempts (worker_id);
CREATE INDEX workers_by_last_seen ON workers (last_seen_at);
