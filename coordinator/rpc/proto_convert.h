// The coordinator's records as the wire (onset.v1) carries them, and the wire's paging: shared by
// the gRPC services and the dashboard's JSON API, which serves the same messages. Protobuf only,
// no gRPC.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/store/store.h"
#include "onset/v1/onset.pb.h"

namespace onset::coordinator {

// Cells per message of SubmitStudy and WatchStudy's snapshot, and per page of GetStudy and the
// dashboard's study by default: a cell takes ~120 bytes, so a piece stays far below gRPC's 4 MB
// message limit. A page asks for at most kMaxPageCells.
inline constexpr size_t kPageCells = 2000;
inline constexpr int kMaxPageCells = 10'000;
// A cell's axes and its last error come from a study file and a worker's report, and may be long:
// a reply (or a streamed piece) of cells also stops before this many bytes, well within gRPC's
// 4 MiB message, and the next page (or piece) goes on from there. It holds one cell at least.
inline constexpr size_t kMaxCellsReplyBytes = size_t{3} << 20;

// A page token is the queue position of the previous page's last cell, in decimal; clients treat
// it as opaque. Empty after the last page.
std::string PageToken(int64_t next_after);
// The page a request asks for: `page_size` cells (0: `default_size`) after `token`.
// InvalidArgument for a size beyond kMaxPageCells or a token this coordinator did not give out.
absl::StatusOr<CellPage> ParsePage(int32_t page_size, const std::string& token, int default_size);

// Domain -> proto.
void ToProto(const StudyInfo& in, onset::v1::Study* out);
void ToProto(const CellInfo& in, onset::v1::Cell* out);
void ToProto(const CellEvent& in, onset::v1::CellEvent* out);

}  // namespace onset::coordinator
