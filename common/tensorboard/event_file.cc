#include "common/tensorboard/event_file.h"

#include <cstring>
#include <utility>

#include "common/tensorboard/crc32c.h"

namespace onset::tensorboard {
namespace {

// The hparams plugin's tags and plugin data version (tensorboard/plugins/hparams/metadata.py).
constexpr char kSessionStartTag[] = "_hparams_/session_start_info";
constexpr char kSessionEndTag[] = "_hparams_/session_end_info";
constexpr int kHParamsVersion = 0;

void AppendLittleEndian(std::string* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

Summary::Value* NewValue(Event* event, const std::string& tag, const char* plugin) {
  Summary::Value* value = event->mutable_summary()->add_value();
  value->set_tag(tag);
  value->mutable_metadata()->mutable_plugin_data()->set_plugin_name(plugin);
  return value;
}

// An hparams summary: its data in the metadata's content, with an empty string tensor as the
// value, as TensorBoard's own writer makes them.
Event HParamsEvent(const char* tag, const HParamsPluginData& data, double wall_time) {
  Event event;
  event.set_wall_time(wall_time);
  Summary::Value* value = NewValue(&event, tag, "hparams");
  value->mutable_metadata()->mutable_plugin_data()->set_content(data.SerializeAsString());
  value->mutable_tensor()->set_dtype(DT_STRING);
  value->mutable_tensor()->mutable_tensor_shape();
  value->mutable_tensor()->add_string_val("");
  return event;
}

}  // namespace

EventFile::EventFile(double wall_time) {
  Event version;
  version.set_wall_time(wall_time);
  version.set_file_version("brain.Event:2");
  Append(version);
}

void EventFile::AddScalar(const std::string& tag, int64_t step, double wall_time, double value) {
  Event event;
  event.set_wall_time(wall_time);
  event.set_step(step);
  TensorProto* tensor = NewValue(&event, tag, "scalars")->mutable_tensor();
  tensor->set_dtype(DT_FLOAT);
  tensor->mutable_tensor_shape();  // no dims: a scalar
  tensor->add_float_val(static_cast<float>(value));
  Append(event);
}

void EventFile::AddText(const std::string& tag, int64_t step, double wall_time,
                        const std::string& text) {
  Event event;
  event.set_wall_time(wall_time);
  event.set_step(step);
  TensorProto* tensor = NewValue(&event, tag, "text")->mutable_tensor();
  tensor->set_dtype(DT_STRING);
  tensor->mutable_tensor_shape();
  tensor->add_string_val(text);
  Append(event);
}

void EventFile::AddSessionStart(const std::map<std::string, HParamValue>& hparams,
                                const std::string& group, double wall_time) {
  HParamsPluginData data;
  data.set_version(kHParamsVersion);
  SessionStartInfo* start = data.mutable_session_start_info();
  start->set_group_name(group);
  start->set_start_time_secs(wall_time);
  for (const auto& [name, value] : hparams) {
    google::protobuf::Value& v = (*start->mutable_hparams())[name];
    if (const auto* text = std::get_if<std::string>(&value)) {
      v.set_string_value(*text);
    } else if (const auto* number = std::get_if<double>(&value)) {
      v.set_number_value(*number);
    } else {
      v.set_bool_value(std::get<bool>(value));
    }
  }
  Append(HParamsEvent(kSessionStartTag, data, wall_time));
}

void EventFile::AddSessionEnd(HParamsStatus status, double wall_time) {
  HParamsPluginData data;
  data.set_version(kHParamsVersion);
  data.mutable_session_end_info()->set_status(status);
  data.mutable_session_end_info()->set_end_time_secs(wall_time);
  Append(HParamsEvent(kSessionEndTag, data, wall_time));
}

std::string EventFile::TakeBytes() { return std::exchange(bytes_, std::string()); }

void EventFile::Append(const Event& event) {
  const std::string data = event.SerializeAsString();
  std::string length;
  AppendLittleEndian(&length, data.size(), 8);
  bytes_ += length;
  AppendLittleEndian(&bytes_, MaskedCrc32c(length), 4);
  bytes_ += data;
  AppendLittleEndian(&bytes_, MaskedCrc32c(data), 4);
}

}  // namespace onset::tensorboard
