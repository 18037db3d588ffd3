#include "model/config/study_defaults.h"

#include <algorithm>
#include <cstdint>
#include <optional>

namespace onset::model {
namespace {

using nlohmann::json;

// The smallest window anywhere in the study, if any.
std::optional<int64_t> SmallestWindow(const json& base, const StudyFieldLookup& field) {
  std::optional<int64_t> smallest;
  auto consider = [&](const json& w) {
    if (w.is_number_integer() && w.get<int64_t>() >= 1) {
      smallest = std::min(smallest.value_or(w.get<int64_t>()), w.get<int64_t>());
    }
  };
  for (const json& w : field("model.window").values) consider(w);
  if (base.contains("model") && base["model"].is_object()) {
    consider(base["model"].value("window", json()));
  }
  return smallest;
}

void DefaultStudyWindow(json* base, const StudyFieldLookup& field) {
  json& eval = (*base)["eval"];
  if (eval.is_null()) eval = json::object();
  if (!eval.is_object()) return;  // the field list refuses it, saying where
  const std::optional<int64_t> smallest = SmallestWindow(*base, field);
  if (!smallest) return;
  for (const char* key : {"short_context", "niah_window"}) {
    if (!eval.contains(key)) eval[key] = *smallest;
  }
}

void DefaultShortConv(json* base, const StudyFieldLookup& field) {
  if (field("model.short_conv").set_by_grid) return;
  json& model = (*base)["model"];
  if (model.is_null()) model = json::object();
  if (model.is_object() && !model.contains("short_conv")) model["short_conv"] = true;
}

}  // namespace

void ApplyStudyDefaults(json* base, const StudyFieldLookup& field) {
  DefaultStudyWindow(base, field);
  DefaultShortConv(base, field);
}

}  // namespace onset::model
