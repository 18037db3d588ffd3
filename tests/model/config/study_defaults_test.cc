// The study-level defaults, each on a case with a known answer and the case where the study
// sets the field itself.
#include "model/config/study_defaults.h"

#include <gtest/gtest.h>

#include <map>

namespace onset::model {
namespace {

using nlohmann::json;

// A lookup over a fixed grid: path -> the values its axes and dependent fields give.
StudyFieldLookup Grid(std::map<std::string, std::vector<json>> fields) {
  return [fields](const std::string& path) {
    FieldAcrossStudy field;
    auto it = fields.find(path);
    if (it != fields.end()) {
      field.set_by_grid = true;
      field.values = it->second;
    }
    return field;
  };
}

TEST(StudyDefaultsTest, TheSmallestWindowAnywhereInTheStudyDefinesTheShortContext) {
  json base = {{"model", {{"window", 32}}}};
  ApplyStudyDefaults(&base, Grid({{"model.window", {json(64), json(16), json("x"), json(0)}}}));
  EXPECT_EQ(base["eval"]["short_context"], 16);
  EXPECT_EQ(base["eval"]["niah_window"], 16);
  // The base's own window counts too.
  json alone = {{"model", {{"window", 8}}}};
  ApplyStudyDefaults(&alone, Grid({{"model.window", {json(64)}}}));
  EXPECT_EQ(alone["eval"]["short_context"], 8);
}

TEST(StudyDefaultsTest, WhatTheStudySaysWins) {
  json base = {{"eval", {{"short_context", 100}}}};
  ApplyStudyDefaults(&base, Grid({{"model.window", {json(16)}}}));
  EXPECT_EQ(base["eval"]["short_context"], 100);
  EXPECT_EQ(base["eval"]["niah_window"], 16);
  // No window anywhere: each cell resolves its own.
  json none = json::object();
  ApplyStudyDefaults(&none, Grid({}));
  EXPECT_FALSE(none["eval"].contains("short_context"));
  EXPECT_FALSE(none["eval"].contains("niah_window"));
}

TEST(StudyDefaultsTest, RecurrentLayersGetTheShortConvolutionUnlessTheStudySetsIt) {
  json base = json::object();
  ApplyStudyDefaults(&base, Grid({}));
  EXPECT_EQ(base["model"]["short_conv"], true);
  json off = {{"model", {{"short_conv", false}}}};
  ApplyStudyDefaults(&off, Grid({}));
  EXPECT_EQ(off["model"]["short_conv"], false);
  json on_grid = json::object();
  ApplyStudyDefaults(&on_grid, Grid({{"model.short_conv", {json(true), json(false)}}}));
  EXPECT_FALSE(on_grid["model"].contains("short_conv"));
}

}  // namespace
}  // namespace onset::model
