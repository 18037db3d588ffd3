// TensorBoard's event file, built in memory: a sequence of TFRecords (8-byte little-endian
// length, its masked CRC-32C, the serialized Event, the data's masked CRC-32C), the first
// record of a file the version "brain.Event:2".
//
// Scalars are the scalars plugin's rank-0 tensors of float32: the only scalar form that
// TensorBoard's default loader (its fast data server) serves; it drops float64 ones. Text is the
// text plugin's string tensors, hyperparameters the hparams plugin's session summaries.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>

#include "tensorboard/event.pb.h"

namespace onset::tensorboard {

// A hyperparameter's value as the hparams dashboard filters it: text, number or flag.
using HParamValue = std::variant<std::string, double, bool>;

class EventFile {
 public:
  // Starts a file with its version record, stamped `wall_time` (seconds since the epoch).
  explicit EventFile(double wall_time);
  // Records that continue a file already started (appended to it).
  EventFile() = default;

  // One scalar point of `tag` (e.g. "niah/acc@512") at `step`, rounded to float32.
  void AddScalar(const std::string& tag, int64_t step, double wall_time, double value);
  // A text summary (markdown, as TensorBoard's text dashboard renders it).
  void AddText(const std::string& tag, int64_t step, double wall_time, const std::string& text);
  // The hparams dashboard's session of this run: its hyperparameters, and `group` naming the
  // session's group (the runs that repeat one setting with other seeds).
  void AddSessionStart(const std::map<std::string, HParamValue>& hparams, const std::string& group,
                       double wall_time);
  // The session's end and how it ended.
  void AddSessionEnd(HParamsStatus status, double wall_time);

  // The file's bytes so far.
  const std::string& bytes() const { return bytes_; }
  // The bytes so far, leaving none: what to append to the file next.
  std::string TakeBytes();

 private:
  void Append(const Event& event);

  std::string bytes_;
};

}  // namespace onset::tensorboard
