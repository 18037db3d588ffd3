// Helpers shared by the coordinator tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "common/clock.h"
#include "coordinator/store/sqlite_store.h"
#include "coordinator/store/store.h"
#include "coordinator/study/study_file.h"
#include "tests/coordinator/study/sample_studies.h"
#include "tests/testing/temp_dir.h"

namespace onset::coordinator::testing {

// The id of a registered worker (RegisterWorker's result without its secret).
inline absl::StatusOr<std::string> WorkerId(const absl::StatusOr<RegisteredWorker>& registered) {
  if (!registered.ok()) return registered.status();
  return registered->id;
}

// The cell `id` of `study` as the store reports it; a test failure if there is none.
inline CellInfo FindCell(StudyStore& store, const std::string& study, const std::string& id) {
  absl::StatusOr<StudyDetail> detail = store.GetStudy(study);
  EXPECT_TRUE(detail.ok()) << detail.status();
  if (!detail.ok()) return {};
  for (const CellInfo& c : detail->cells) {
    if (c.id == id) return c;
  }
  ADD_FAILURE() << "no cell " << id << " in study " << study;
  return {};
}

// A store on the file `path` holding kSmallStudy and one registered worker (its id in *worker):
// the starting point of the store-level tests. A failure fails the test and returns null.
inline std::unique_ptr<SqliteStore> OpenSmallStudyStore(const std::string& path,
                                                        const common::Clock& clock,
                                                        std::string* worker) {
  absl::StatusOr<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(path, clock);
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return nullptr;
  absl::StatusOr<StudySpec> spec = ParseStudyFile("s.yaml", kSmallStudy);
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return nullptr;
  absl::Status added =
      (*store)->AddStudy({spec->name, "", "s.yaml", spec->source_yaml, spec->cells}).status();
  EXPECT_TRUE(added.ok()) << added;
  absl::StatusOr<std::string> id = WorkerId((*store)->RegisterWorker({"h", 1, "v"}));
  EXPECT_TRUE(id.ok()) << id.status();
  if (!added.ok() || !id.ok()) return nullptr;
  *worker = *id;
  return *std::move(store);
}

}  // namespace onset::coordinator::testing
