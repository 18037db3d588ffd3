#include "coordinator/rpc/study_listing.h"

#include <google/protobuf/io/coded_stream.h>

#include <algorithm>

#include "absl/strings/numbers.h"
#include "coordinator/rpc/proto_convert.h"

namespace onset::coordinator {

absl::StatusOr<onset::v1::ListStudiesResponse> ListStudiesPage(StudyStore& store, int32_t page_size,
                                                               const std::string& page_token,
                                                               size_t max_bytes) {
  if (page_size < 0 || page_size > kMaxStudiesPerPage) {
    return absl::InvalidArgumentError(
        "page_size: must be 0..1000 (0 = " + std::to_string(kStudiesPerPage) + ")");
  }
  StudyQuery query;
  query.limit = page_size == 0 ? kStudiesPerPage : page_size;
  if (!page_token.empty() &&
      (page_token.size() > 20 || !absl::SimpleAtoi(page_token, &query.after) || query.after <= 0)) {
    return absl::InvalidArgumentError("page_token: not one this coordinator gave out");
  }
  absl::StatusOr<StudyListing> page = store.ListStudyPage(query);
  if (!page.ok()) return page.status();
  onset::v1::ListStudiesResponse reply;
  // Each study costs its own size, its length and its field's tag (1 byte).
  size_t bytes = 0;
  size_t listed = 0;
  for (const StudyInfo& study : page->studies) {
    onset::v1::Study out;
    ToProto(study, &out);
    const size_t size = out.ByteSizeLong();
    const size_t cost = 1 + google::protobuf::io::CodedOutputStream::VarintSize64(size) + size;
    if (listed > 0 && bytes + cost > max_bytes) break;
    *reply.add_studies() = std::move(out);
    bytes += cost;
    ++listed;
  }
  const int64_t omitted = page->more + static_cast<int64_t>(page->studies.size() - listed);
  if (omitted > 0 && listed > 0) {
    reply.set_next_page_token(std::to_string(page->studies[listed - 1].row));
  }
  reply.set_omitted(static_cast<int32_t>(std::min<int64_t>(omitted, INT32_MAX)));
  return reply;
}

}  // namespace onset::coordinator
