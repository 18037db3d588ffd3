// Fuzz target for the study-file parser (coordinator/study/study_file.h), the code that reads what
// anyone with a token sends onsetd. Any input must come back as a spec or an InvalidArgument
// that names the file: no crash, exception, leak or hang. Built with libFuzzer under clang, or
// with fuzz_driver.cc (a bounded mutation runner) under any compiler; docs/fuzzing.md says how
// to run either.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "coordinator/study/study_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<onset::coordinator::StudySpec> spec =
      onset::coordinator::ParseStudyFile("fuzz.yaml", text, "/studies");
  if (spec.ok()) {
    // Every cell carries the canonical config a worker hands the trainer.
    for (const onset::coordinator::CellSpec& cell : spec->cells) {
      if (cell.id.size() != 16 || cell.config_json.empty()) std::abort();
    }
    return 0;
  }
  const std::string message(spec.status().message());
  if (spec.status().code() != absl::StatusCode::kInvalidArgument ||
      message.rfind("fuzz.yaml", 0) != 0) {
    std::fprintf(stderr, "unexpected error: %s\n", spec.status().ToString().c_str());
    std::abort();
  }
  return 0;
}
