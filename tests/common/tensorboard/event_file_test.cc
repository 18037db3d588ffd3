#include "common/tensorboard/event_file.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/common/tensorboard/event_records.h"

namespace onset::tensorboard {
namespace {

using testing::ReadRecords;

TEST(EventFileTest, FramesAVersionRecordThenScalarsAsFloat32AndText) {
  EventFile file(1796558400.5);
  file.AddScalar("niah/acc@512", 4096, 1796558401.25, 0.1 + 0.2);
  file.AddText("cell", 0, 1796558400.5, "| axis | value |");
  const std::vector<Event> events = ReadRecords(file.bytes());
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_EQ(events[0].wall_time(), 1796558400.5);
  const Summary::Value& scalar = events[1].summary().value(0);
  EXPECT_EQ(events[1].step(), 4096);
  EXPECT_EQ(events[1].wall_time(), 1796558401.25);
  EXPECT_EQ(scalar.tag(), "niah/acc@512");
  EXPECT_EQ(scalar.metadata().plugin_data().plugin_name(), "scalars");
  // float32: the only scalar tensor TensorBoard's default loader serves.
  EXPECT_EQ(scalar.tensor().dtype(), DT_FLOAT);
  EXPECT_EQ(scalar.tensor().tensor_shape().dim_size(), 0);
  EXPECT_EQ(scalar.tensor().double_val_size(), 0);
  ASSERT_EQ(scalar.tensor().float_val_size(), 1);
  EXPECT_EQ(scalar.tensor().float_val(0), static_cast<float>(0.1 + 0.2));
  const Summary::Value& text = events[2].summary().value(0);
  EXPECT_EQ(text.metadata().plugin_data().plugin_name(), "text");
  EXPECT_EQ(text.tensor().dtype(), DT_STRING);
  EXPECT_EQ(text.tensor().string_val(0), "| axis | value |");
}

TEST(EventFileTest, HParamsSessionsCarryTheirValuesInThePluginContent) {
  EventFile file;
  file.AddSessionStart({{"arch", std::string("swa")}, {"lr", 0.5}, {"tied", true}}, "demo/arch=swa",
                       100.0);
  file.AddSessionEnd(STATUS_SUCCESS, 200.0);
  const std::vector<Event> events = ReadRecords(file.bytes());
  ASSERT_EQ(events.size(), 2u);  // no version record: the records continue a file
  const Summary::Value& start = events[0].summary().value(0);
  EXPECT_EQ(start.tag(), "_hparams_/session_start_info");
  EXPECT_EQ(start.metadata().plugin_data().plugin_name(), "hparams");
  HParamsPluginData data;
  ASSERT_TRUE(data.ParseFromString(start.metadata().plugin_data().content()));
  EXPECT_EQ(data.version(), 0);
  EXPECT_EQ(data.session_start_info().group_name(), "demo/arch=swa");
  EXPECT_EQ(data.session_start_info().start_time_secs(), 100.0);
  EXPECT_EQ(data.session_start_info().hparams().at("arch").string_value(), "swa");
  EXPECT_EQ(data.session_start_info().hparams().at("lr").number_value(), 0.5);
  EXPECT_TRUE(data.session_start_info().hparams().at("tied").bool_value());
  const Summary::Value& end = events[1].summary().value(0);
  EXPECT_EQ(end.tag(), "_hparams_/session_end_info");
  ASSERT_TRUE(data.ParseFromString(end.metadata().plugin_data().content()));
  EXPECT_EQ(data.session_end_info().status(), STATUS_SUCCESS);
  EXPECT_EQ(data.session_end_info().end_time_secs(), 200.0);
}

TEST(EventFileTest, TakeBytesLeavesNoneSoAppendsNeverRepeatARecord) {
  EventFile file(1.0);
  file.AddScalar("train/loss", 1, 2.0, 3.0);
  const std::string first = file.TakeBytes();
  EXPECT_TRUE(file.bytes().empty());
  file.AddScalar("train/loss", 2, 3.0, 2.5);
  const std::vector<Event> events = ReadRecords(first + file.TakeBytes());
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[1].step(), 1);
  EXPECT_EQ(events[2].step(), 2);
}

}  // namespace
}  // namespace onset::tensorboard
