#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "cli/tensorboard/crc32c.h"
#include "cli/tensorboard/event_file.h"
#include "cli/tensorboard/tensorboard_export.h"

namespace onset::tensorboard {
namespace {

// RFC 3720, B.4, and the check value of the CRC-32C catalogue entry.
TEST(Crc32cTest, MatchesTheStandardsCheckValues) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  EXPECT_EQ(Crc32c(""), 0u);
}

TEST(Crc32cTest, TheMaskRotatesAndAddsTheConstant) {
  const uint32_t crc = Crc32c("abc");
  EXPECT_EQ(MaskedCrc32c("abc"), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

uint64_t ReadLittleEndian(const std::string& bytes, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
  return v;
}

// Splits a file into its records, checking each frame's checksums.
std::vector<Event> ReadRecords(const std::string& bytes) {
  std::vector<Event> events;
  size_t at = 0;
  while (at < bytes.size()) {
    EXPECT_LE(at + 12, bytes.size());
    const uint64_t length = ReadLittleEndian(bytes, at, 8);
    EXPECT_EQ(ReadLittleEndian(bytes, at + 8, 4), MaskedCrc32c(bytes.substr(at, 8)));
    const std::string data = bytes.substr(at + 12, length);
    EXPECT_EQ(ReadLittleEndian(bytes, at + 12 + length, 4), MaskedCrc32c(data));
    Event event;
    EXPECT_TRUE(event.ParseFromString(data));
    events.push_back(event);
    at += 12 + length + 4;
  }
  EXPECT_EQ(at, bytes.size());
  return events;
}

TEST(EventFileTest, FramesAVersionRecordThenScalarsAsFloat64AndText) {
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
  EXPECT_EQ(scalar.tensor().dtype(), DT_DOUBLE);
  EXPECT_EQ(scalar.tensor().tensor_shape().dim_size(), 0);
  ASSERT_EQ(scalar.tensor().double_val_size(), 1);
  EXPECT_EQ(scalar.tensor().double_val(0), 0.1 + 0.2);  // exactly, not rounded to float32
  const Summary::Value& text = events[2].summary().value(0);
  EXPECT_EQ(text.metadata().plugin_data().plugin_name(), "text");
  EXPECT_EQ(text.tensor().dtype(), DT_STRING);
  EXPECT_EQ(text.tensor().string_val(0), "| axis | value |");
}

v1::Cell CellWith(std::map<std::string, std::string> axes) {
  v1::Cell cell;
  cell.set_id("0123456789abcdef");
  for (const auto& [k, v] : axes) (*cell.mutable_axes())[k] = v;
  return cell;
}

TEST(RunDirectoryTest, GroupsSeedsOfOneVariantUnderItsAxes) {
  EXPECT_EQ(RunDirectory(CellWith({{"arch", "swa"}, {"window", "16"}, {"seed", "2"}})),
            "arch=swa,window=16/seed=2,id=0123456789abcdef");
  EXPECT_EQ(RunDirectory(CellWith({{"arch", "full"}})), "arch=full/id=0123456789abcdef");
  EXPECT_EQ(RunDirectory(CellWith({})), "id=0123456789abcdef");
}

TEST(RunDirectoryTest, NeverLeavesItsDirectory) {
  const std::string dir =
      RunDirectory(CellWith({{"arch", "../../etc"}, {"pos", "F:rope S/nope"}, {"seed", "/"}}));
  EXPECT_EQ(dir, "arch=.._.._etc,pos=F:rope_S_nope/seed=_,id=0123456789abcdef");
  const std::string long_value(1000, 'x');
  const std::string bounded = RunDirectory(CellWith({{"arch", long_value}}));
  EXPECT_EQ(bounded.find('/'), 200u);
}

}  // namespace
}  // namespace onset::tensorboard
