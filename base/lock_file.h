// The lock file beside a database (db/database_lock.h takes it; a client asks whether it is
// held), so that the name and the test of "a coordinator serves this database" have one
// definition that the coordinator and the CLI share.
#pragma once

#include <string>

namespace onset::base {

// PATH.lock for the database at `db_path`.
std::string LockFileFor(const std::string& db_path);

// Whether some process holds a flock() on the file at `path`: true only when a shared lock
// cannot be had without waiting. A missing or unreadable file is not held. The kernel drops a
// flock when its holder dies, however it dies, so "held" means "its holder is alive".
bool LockHeld(const std::string& path);

}  // namespace onset::base
