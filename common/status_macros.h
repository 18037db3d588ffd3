// Early-return helpers for absl::Status / absl::StatusOr (abseil does not ship public ones).
#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns the status of `expr` from the enclosing function when it is not OK.
#define ONSET_RETURN_IF_ERROR(expr)                                   \
  do {                                                                \
    if (::absl::Status onset_status_ = (expr); !onset_status_.ok()) { \
      return onset_status_;                                           \
    }                                                                 \
  } while (0)

#define ONSET_STATUS_CONCAT_INNER(a, b) a##b
#define ONSET_STATUS_CONCAT(a, b) ONSET_STATUS_CONCAT_INNER(a, b)

// `lhs = value of expr`, or returns its status from the enclosing function.
//   ONSET_ASSIGN_OR_RETURN(auto stmt, db->Prepare("..."));
#define ONSET_ASSIGN_OR_RETURN(lhs, expr) \
  ONSET_ASSIGN_OR_RETURN_IMPL(ONSET_STATUS_CONCAT(onset_statusor_, __LINE__), lhs, expr)
#define ONSET_ASSIGN_OR_RETURN_IMPL(statusor, lhs, expr)   \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()
