// Helpers shared by the coordinator tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "common/clock.h"
#include "coordinator/sqlite_store.h"
#include "coordinator/store.h"
#include "coordinator/study_file.h"
#include "tests/testing/temp_dir.h"

namespace onset::coordinator::testing {

// The cell `id` of `study` as the store reports it; a test failure if there is none.
inline CellInfo FindCell(Store& store, const std::string& study, const std::string& id) {
  absl::StatusOr<StudyDetail> detail = store.GetStudy(study);
  EXPECT_TRUE(detail.ok()) << detail.status();
  if (!detail.ok()) return {};
  for (const CellInfo& c : detail->cells) {
    if (c.id == id) return c;
  }
  ADD_FAILURE() << "no cell " << id << " in study " << study;
  return {};
}

// A small valid study: 2 archs x 2 windows x 2 seeds, where `full` ignores the window:
// full: 2 cells, swa: 4 cells.
inline constexpr const char* kSmallStudy = R"yaml(name: small
model:
  layers: 4
  d_model: 32
  heads: 2
  seq_len: 64
train:
  tokens: 64K
  batch_tokens: 512
grid:
  arch: [full, swa]
  window: [16, 32]
  seeds: 2
)yaml";

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
  absl::StatusOr<std::string> id = (*store)->RegisterWorker({"h", 1, "v"});
  EXPECT_TRUE(id.ok()) << id.status();
  if (!added.ok() || !id.ok()) return nullptr;
  *worker = *id;
  return *std::move(store);
}

}  // namespace onset::coordinator::testing
