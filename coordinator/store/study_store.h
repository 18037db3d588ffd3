// The store's studies: submitting one (or previewing it), listing them, reading a study and its
// cells, finding cells by their ids.
//
// Thread-safety: implementations are safe to call from any thread. Errors shared by all methods:
// Unavailable (may pass: busy, disk full) or Internal for database failures (the message names
// the file; db/sqlite.h maps SQLite's errors).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/cells/cell_state.h"
#include "coordinator/study/grid.h"

namespace onset::coordinator {

struct StudyInfo {
  // Its place in listings, oldest first: a StudyQuery's `after` lists the studies after it.
  int64_t row = 0;
  std::string name;
  std::string description;
  std::vector<std::string> tags;  // sorted
  std::string source_name;
  std::string source_yaml;  // empty in listings (ListStudyPage): a file may be a MB
  int64_t created_unix_ms = 0;
  // Grid points only: trunks (CellRole::kTrunk) are jobs and are not counted.
  int cells_total = 0;
  std::map<std::string, int> cells_by_state;  // CellStateName -> count; absent = 0
  // Set when the latest kRepeatedFailures failed attempts of the study failed alike (same
  // failure class and reason): "3 cells in a row failed: <reason>", the reason cut after
  // kMaxAlertReasonBytes ("..." then follows). Empty otherwise.
  std::string alert;
  // Set when queued cells of the study need more devices than any registered worker has:
  // "2 queued cells need 4 devices; the largest registered worker has 2". Empty otherwise (and
  // while no worker is registered).
  std::string waiting;
};

inline constexpr int kRepeatedFailures = 3;
inline constexpr size_t kMaxAlertReasonBytes = 1024;
struct CellInfo {
  std::string id;  // content hash
  std::string study;
  std::map<std::string, std::string> axes;
  std::map<std::string, std::vector<std::string>> axis_aliases;  // CellSpec::axis_aliases
  CellState state = CellState::kQueued;
  int64_t tokens_done = 0;
  int64_t tokens_budget = 0;
  std::optional<double> latest_loss;  // the "train/loss" point with the most tokens
  int attempts = 0;                   // attempts started
  // Reason of the latest attempt if it did not succeed; for a branch that ended because its
  // trunk did, "trunk ID STATE: REASON".
  std::string last_error;
  double tokens_per_second = 0;
  int failures = 0;              // counted failures since it was last queued by hand
  int64_t retry_at_unix_ms = 0;  // state kBackoff: claimable from then on
  int devices = 1;               // devices one attempt needs
  // The model of its config (model_cost.h); 0 when the config cannot be read.
  int64_t non_embedding_params = 0;
  double train_flops_per_token = 0;
  CellRole role = CellRole::kCell;  // CellSpec::role
  std::string trunk_id;             // kBranch: its trunk's id
  int64_t branch_tokens = 0;        // kBranch: the trunk checkpoint it starts from, tokens
  // kBranch, queued or backing off: the trunk has not reported that checkpoint yet (no
  // "checkpoint/bytes" point at branch_tokens); the branch cannot be claimed until it does.
  bool waiting_for_trunk = false;
  // Its place in the study's queue, when it was read as part of a page (CellPage): a page that a
  // reply cuts short continues after it. 0 otherwise.
  int64_t queue_position = 0;
};

struct NewStudy {
  std::string name;
  std::string description;
  std::string source_name;
  std::string source_yaml;
  std::vector<CellSpec> cells;
  int devices = 1;  // devices one attempt of each new cell needs (data-parallel ranks)
  // PlanInputDigest (trunk_plan.h) of the stored study its trunks were planned against: set,
  // AddStudy stores nothing and fails with Aborted when the study's stored plan differs now
  // (another submission of it was stored meanwhile), so that the caller plans again.
  std::optional<std::string> planned_against = std::nullopt;
  // Sorted and distinct. Added to the stored study's tags; none is ever removed, and a study
  // keeps at most kMaxTags (study_file.h): AddStudy refuses tags that would take it past that.
  std::vector<std::string> tags = {};
};

struct AddStudyResult {
  StudyInfo study;
  int cells_added = 0;                    // cells that did not exist before
  std::vector<CellInfo> cells;            // every cell of the submission, in its order
  std::vector<std::string> new_cell_ids;  // those that did not exist before, in its order
};

// Which of a study's cells a read returns, in queue order: those after queue position `after`
// (0: from the first), at most `limit` of them (0: all).
struct CellPage {
  int64_t after = 0;
  int limit = 0;
};

// Which studies a listing reads, oldest first: those after the study whose StudyInfo::row is
// `after` (0: from the first), at most `limit` of them (1..kMaxStudiesPerRead).
struct StudyQuery {
  int64_t after = 0;
  int limit = 0;
};
inline constexpr int kMaxStudiesPerRead = 1000;

struct StudyListing {
  std::vector<StudyInfo> studies;  // oldest first, without their source_yaml
  int64_t more = 0;                // studies stored after this page's last
};

// Which cells a watcher's progress check reads: the running ones and the named ones.
struct CellFilter {
  bool running = false;
  std::vector<std::string> ids;
};

struct StudyDetail {
  StudyInfo study;
  std::vector<CellInfo> cells;  // queue order
  int64_t next_after = 0;       // the `after` of the next page; 0 when this one is the last
};

// What trunk planning (trunk_plan.h) needs to know of a stored cell.
struct StoredPlanCell {
  std::string id;
  CellRole role = CellRole::kCell;
  std::string trunk_id;       // kBranch
  int64_t branch_tokens = 0;  // kBranch
  CellState state = CellState::kQueued;
  int64_t tokens_done = 0;
  int64_t tokens_budget = 0;
  std::string config_json;  // kTrunk only: its trunk spec
};

// Studies and their cells, as submitted and as they stand.
class StudyStore {
 public:
  virtual ~StudyStore() = default;

  // Inserts the study (or finds it by name) and the cells it does not have yet. Every check
  // runs before anything is written; the rows are then written in bounded transactions (so that
  // no other write waits long behind a large submission): a write that fails midway leaves the
  // cells written so far, and its error says how many (submitting the file again adds the rest).
  // A new branch is never claimable before it is linked to its trunk. The same file twice adds
  // nothing; a changed file under the same name adds only its new
  // cells (existing cells, also those no longer in the file, stay), records the latest source
  // and shows the existing cells it names with its display axes. Studies are append-only
  // (append_only.h): FailedPrecondition, and nothing written, when a new cell would redefine
  // the grid point of a stored one (trunks are not grid points and are not compared).
  // Cells of role kTrunk whose id is stored already are trunks being extended: when the new
  // spec's tokens_budget is larger, the stored config_json and tokens_budget are replaced and a
  // succeeded trunk is queued again (it resumes from its last checkpoint); otherwise the stored
  // trunk stays as it is. A stored cell keeps its role. A new branch's trunk_id must name a
  // trunk of the study, stored before or in this submission: InvalidArgument, and nothing
  // written, otherwise. FailedPrecondition, and nothing written, when the tags the study lacks
  // would take it past kMaxTags (the message names the study, its count and the limit).
  virtual absl::StatusOr<AddStudyResult> AddStudy(const NewStudy& study) = 0;
  // What AddStudy would return, errors included, without writing anything; it reads only (on a
  // reader: it never holds up a write). Cells not stored yet appear queued.
  virtual absl::StatusOr<AddStudyResult> PreviewStudy(const NewStudy& study) = 0;
  // Every stored cell of the study with its role, trunks included; empty for an unknown study.
  virtual absl::StatusOr<std::vector<StoredPlanCell>> PlanCells(const std::string& study) = 0;
  // The studies of `query`, oldest first, read by their index; InvalidArgument for a limit
  // outside 1..kMaxStudiesPerRead.
  virtual absl::StatusOr<StudyListing> ListStudyPage(const StudyQuery& query) = 0;
  // Every study, oldest first, read a page at a time (each page its own read), for callers that
  // need them all in memory (the metrics page, the notifier). Without their source_yaml.
  absl::StatusOr<std::vector<StudyInfo>> ListStudies() {
    std::vector<StudyInfo> all;
    StudyQuery query{0, kMaxStudiesPerRead};
    while (true) {
      absl::StatusOr<StudyListing> page = ListStudyPage(query);
      if (!page.ok()) return page.status();
      if (page->studies.empty()) return all;
      query.after = page->studies.back().row;
      for (StudyInfo& study : page->studies) all.push_back(std::move(study));
      if (page->more == 0) return all;
    }
  }
  // The study and the cells of `page`. NotFound for an unknown name.
  virtual absl::StatusOr<StudyDetail> GetStudy(const std::string& name, const CellPage& page) = 0;
  absl::StatusOr<StudyDetail> GetStudy(const std::string& name) { return GetStudy(name, {}); }
  // The study's cells that `filter` selects (queue order), without the study. NotFound for an
  // unknown study.
  virtual absl::StatusOr<std::vector<CellInfo>> FindCells(const std::string& study,
                                                          const CellFilter& filter) = 0;
  // `ids` with each one shorter than a full id (base::kCellIdHexChars) replaced by the id of the
  // one cell of `study` it begins; full ids are kept as they are. NotFound for an unknown study or
  // a prefix no cell begins; InvalidArgument for a prefix of fewer than 4 lowercase hex digits, or
  // one that several cells begin (the message lists some of them).
  virtual absl::StatusOr<std::vector<std::string>> ResolveCellIds(
      const std::string& study, const std::vector<std::string>& ids) = 0;
};

}  // namespace onset::coordinator
