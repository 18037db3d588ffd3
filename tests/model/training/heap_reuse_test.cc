// KeepFreedMemory: blocks the size of a small model's activations come from the heap, not from
// fresh mappings that a free hands back to the kernel.
#include "model/training/heap_reuse.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace onset::model {
namespace {

#if defined(__GLIBC__)
TEST(HeapReuseTest, ActivationSizedBlocksComeFromTheHeap) {
  ASSERT_TRUE(KeepFreedMemory());
  const size_t mapped_before = mallinfo2().hblkhd;
  void* block = std::malloc(8 << 20);  // 8 MiB: above glibc's first mmap threshold
  ASSERT_NE(block, nullptr);
  std::memset(block, 1, 8 << 20);
  EXPECT_EQ(mallinfo2().hblkhd, mapped_before);  // not a mapping of its own
  std::free(block);
  // The control: past 32 MiB a block is still a mapping of its own.
  void* huge = std::malloc(64 << 20);
  ASSERT_NE(huge, nullptr);
  EXPECT_GE(mallinfo2().hblkhd, mapped_before + (64 << 20));
  std::free(huge);
}
#endif

}  // namespace
}  // namespace onset::model
