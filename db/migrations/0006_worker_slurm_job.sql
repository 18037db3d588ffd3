-- Version 6: the Slurm job a worker runs in ("1234", or "1234_5" for a task of a job array), as
-- it reported at registration; '' outside Slurm and for every worker registered before.
ALTER TABLE workers ADD COLUMN slurm_job TEXT NOT NULL DEFAULT '';
