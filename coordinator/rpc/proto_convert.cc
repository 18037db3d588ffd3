#include "coordinator/rpc/proto_convert.h"

namespace onset::coordinator {

std::string PageToken(int64_t next_after) {
  return next_after > 0 ? std::to_string(next_after) : "";
}

absl::StatusOr<CellPage> ParsePage(int32_t page_size, const std::string& token, int default_size) {
  if (page_size < 0 || page_size > kMaxPageCells) {
    return absl::InvalidArgumentError(
        "page_size: must be 0..10000 (0 = " + std::to_string(default_size) + ")");
  }
  CellPage page;
  page.limit = page_size == 0 ? default_size : page_size;
  if (!token.empty()) {
    int64_t after = 0;
    if (!absl::SimpleAtoi(token, &after) || after <= 0) {
      return absl::InvalidArgumentError("page_token: not one this coordinator gave out");
    }
    page.after = after;
  }
  return page;
}

void ToProto(const StudyInfo& in, onset::v1::Study* out) {
  out->set_name(in.name);
  out->set_source_name(in.source_name);
  out->set_created_unix_ms(in.created_unix_ms);
  out->set_cells_total(in.cells_total);
  for (const auto& [state, count] : in.cells_by_state)
    (*out->mutable_cells_by_state())[state] = count;
  out->set_alert(in.alert);
  out->set_waiting(in.waiting);
  out->set_description(in.description);
  for (const std::string& tag : in.tags) out->add_tags(tag);
}

void ToProto(const CellInfo& in, onset::v1::Cell* out) {
  out->set_id(in.id);
  out->set_study(in.study);
  for (const auto& [axis, value] : in.axes) (*out->mutable_axes())[axis] = value;
  out->set_state(ToWire(in.state));
  out->set_tokens_done(in.tokens_done);
  out->set_tokens_budget(in.tokens_budget);
  if (in.latest_loss) out->set_latest_loss(*in.latest_loss);
  out->set_attempts(in.attempts);
  out->set_last_error(in.last_error);
  out->set_tokens_per_second(in.tokens_per_second);
  out->set_failures(in.failures);
  out->set_retry_at_unix_ms(in.retry_at_unix_ms);
  out->set_devices(in.devices);
  for (const auto& [axis, values] : in.axis_aliases) {
    onset::v1::AxisValues& to = (*out->mutable_axis_aliases())[axis];
    for (const std::string& v : values) to.add_values(v);
  }
  out->set_non_embedding_params(in.non_embedding_params);
  out->set_train_flops_per_token(in.train_flops_per_token);
  out->set_role(std::string(wire::RoleName(in.role)));
  out->set_trunk_id(in.trunk_id);
  out->set_branch_tokens(in.branch_tokens);
  out->set_waiting_for_trunk(in.waiting_for_trunk);
}

void ToProto(const CellEvent& in, onset::v1::CellEvent* out) {
  out->set_seq(in.seq);
  out->set_cell_id(in.cell_id);
  for (const auto& [axis, value] : in.axes) (*out->mutable_axes())[axis] = value;
  out->set_from(in.from ? ToWire(*in.from) : onset::v1::CELL_STATE_UNSPECIFIED);
  out->set_to(ToWire(in.to));
  out->set_at_unix_ms(in.at_unix_ms);
  out->set_attempt(in.attempt);
  out->set_worker_id(in.worker_id);
  out->set_reason(in.reason);
}

}  // namespace onset::coordinator
