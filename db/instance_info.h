// The records of db/instance.h, without SQLite: what a database file is (its generation, a
// backup's stamp, its latest restore), for the interfaces that pass them on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace onset::db {

// What a backup's stamp says.
struct BackupStamp {
  int64_t taken_unix_ms = 0;  // the commit the copy is, by the coordinator's clock
  std::string source;         // e.g. "onsetd on HOST serving /data/onset.db"
};

struct InstanceInfo {
  int64_t generation = 1;
  std::optional<BackupStamp> backup;  // set while no coordinator has served the file
  std::optional<int64_t> restored_unix_ms;
  BackupStamp restored_from;        // the backup of the latest restore
  int64_t claims_from_unix_ms = 0;  // no claim before
};

}  // namespace onset::db
