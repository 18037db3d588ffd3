// What the database file is and what happened to it: its generation and restores
// (db/instance.h), and the rotating backups its coordinator wrote (db/backup_rotation.h).
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "db/backup_records.h"
#include "db/instance_info.h"

namespace onset::coordinator {

// What StartServing found and did.
struct ServingStart {
  bool restored = false;      // the file was a backup's copy: a new generation began
  int handed_back = 0;        // attempts the copy held open, ended then
  db::InstanceInfo instance;  // afterwards
};

class InstanceStore : public db::BackupRecords {
 public:
  ~InstanceStore() override = default;

  // Called once by a coordinator before it serves the file. When the file is a backup's copy
  // that no coordinator has served (it carries a backup stamp), this is a restore, and in one
  // transaction: the stamp is cleared; the generation becomes one more than both the copy's and
  // `highest_generation_seen` (db::ReadGenerationMark); the restore is recorded; every attempt
  // the copy holds open is handed back (its cell queued again, no failure counted: those attempts
  // belong to the timeline the restore lost, and their workers are told to stop at their next
  // call); and no cell may be claimed for `claim_wait_ms` (claims_from_unix_ms), the time in
  // which the workers of that timeline stop their trainers. Otherwise nothing changes. Either
  // way the store numbers the attempts it claims from then on above db::AttemptFloor of the
  // generation and refuses every call for an attempt of an earlier generation.
  virtual absl::StatusOr<ServingStart> StartServing(int64_t highest_generation_seen,
                                                    int64_t claim_wait_ms) = 0;

  // The instance row as it is now.
  virtual absl::StatusOr<db::InstanceInfo> Instance() = 0;
};

}  // namespace onset::coordinator
