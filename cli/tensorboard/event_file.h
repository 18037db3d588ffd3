// TensorBoard's event file, built in memory: a sequence of TFRecords (8-byte little-endian
// length, its masked CRC-32C, the serialized Event, the data's masked CRC-32C), the first
// record the file version "brain.Event:2". Scalars are written as the scalars plugin's rank-0
// tensors of float64, so a value reads back exactly as onset stored it (the older
// `simple_value` is float32); text as the text plugin's string tensors.
#pragma once

#include <cstdint>
#include <string>

#include "tensorboard/event.pb.h"

namespace onset::tensorboard {

class EventFile {
 public:
  // Starts the file with its version record, stamped `wall_time` (seconds since the epoch).
  explicit EventFile(double wall_time);

  // One scalar point of `tag` (e.g. "niah/acc@512") at `step`.
  void AddScalar(const std::string& tag, int64_t step, double wall_time, double value);
  // A text summary (markdown, as TensorBoard's text dashboard renders it).
  void AddText(const std::string& tag, int64_t step, double wall_time, const std::string& text);

  // The file's bytes so far.
  const std::string& bytes() const { return bytes_; }

 private:
  void Append(const Event& event);

  std::string bytes_;
};

}  // namespace onset::tensorboard
