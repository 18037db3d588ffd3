// Test helper: the Events of a TensorBoard event file, each frame's checksums checked.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/tensorboard/crc32c.h"
#include "tensorboard/event.pb.h"

namespace onset::tensorboard::testing {

inline uint64_t ReadLittleEndian(const std::string& bytes, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
  return v;
}

inline std::vector<Event> ReadRecords(const std::string& bytes) {
  std::vector<Event> events;
  size_t at = 0;
  while (at < bytes.size()) {
    EXPECT_LE(at + 12, bytes.size());
    if (at + 12 > bytes.size()) break;
    const uint64_t length = ReadLittleEndian(bytes, at, 8);
    EXPECT_EQ(ReadLittleEndian(bytes, at + 8, 4), MaskedCrc32c(bytes.substr(at, 8)));
    EXPECT_LE(at + 12 + length + 4, bytes.size());
    if (at + 12 + length + 4 > bytes.size()) break;
    const std::string data = bytes.substr(at + 12, length);
    EXPECT_EQ(ReadLittleEndian(bytes, at + 12 + length, 4), MaskedCrc32c(data));
    Event event;
    EXPECT_TRUE(event.ParseFromString(data));
    events.push_back(event);
    at += 12 + length + 4;
  }
  return events;
}

}  // namespace onset::tensorboard::testing
