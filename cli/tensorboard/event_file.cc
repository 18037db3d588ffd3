#include "cli/tensorboard/event_file.h"

#include <cstring>

#include "cli/tensorboard/crc32c.h"

namespace onset::tensorboard {
namespace {

void AppendLittleEndian(std::string* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

Summary::Value* NewValue(Event* event, const std::string& tag, const char* plugin) {
  Summary::Value* value = event->mutable_summary()->add_value();
  value->set_tag(tag);
  value->mutable_metadata()->mutable_plugin_data()->set_plugin_name(plugin);
  return value;
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
  tensor->set_dtype(DT_DOUBLE);
  tensor->mutable_tensor_shape();  // no dims: a scalar
  tensor->add_double_val(value);
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
