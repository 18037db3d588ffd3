// ListStudies as the wire carries it, a page at a time: shared by the gRPC service and the
// dashboard's JSON API, which serve the same message. Protobuf only, no gRPC.
//
// A page is read by the studies' index (StudyStore::ListStudyPage: never every study) and holds
// at most page_size studies, and only as many as fit in kMaxStudiesReplyBytes of serialized
// reply, well within gRPC's default 4 MiB message; the rest are counted as omitted and reached
// with next_page_token, the row of the page's last study in decimal (clients treat it as opaque).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/store/study_store.h"
#include "onset/v1/onset.pb.h"

namespace onset::coordinator {

// Studies per page unless the request asks for another number, and the most it may ask for.
inline constexpr int kStudiesPerPage = 500;
inline constexpr int kMaxStudiesPerPage = kMaxStudiesPerRead;
// A ListStudies reply is at most this many bytes serialized. Every study takes a few KB at most
// (name, file name, description, tags and alert are bounded), so one always fits; a study stored
// larger before those bounds is still listed, alone on its page.
inline constexpr size_t kMaxStudiesReplyBytes = 3 * 1024 * 1024;

// The page of studies that `page_size` (0: kStudiesPerPage) and `page_token` ("" or a
// next_page_token) name, within `max_bytes`. InvalidArgument, naming the field, for a size
// outside 0..kMaxStudiesPerPage or a token this coordinator did not give out; the store's errors
// otherwise.
absl::StatusOr<onset::v1::ListStudiesResponse> ListStudiesPage(
    StudyStore& store, int32_t page_size, const std::string& page_token,
    size_t max_bytes = kMaxStudiesReplyBytes);

}  // namespace onset::coordinator
