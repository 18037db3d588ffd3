// The database schema as an ordered list of migrations, compiled into the binary from
// db/migrations/NNNN_name.sql (see db/CMakeLists.txt): no file is read at run time.
#pragma once

#include <vector>

namespace onset::db {

struct Migration {
  int version;       // NNNN from the file name; PRAGMA user_version after it is applied
  const char* name;  // the rest of the file name, e.g. "initial"
  const char* sql;   // the file's text, one or more statements
};

// Every migration, ascending by version, versions contiguous from 1.
const std::vector<Migration>& Migrations();

}  // namespace onset::db
