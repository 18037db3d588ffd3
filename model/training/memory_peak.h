// How much memory a training process has needed at most, as the trainer reports it at its log
// steps (docs/metrics.md): the process's peak resident set, and on a GPU the CUDA caching
// allocator's peak of allocated bytes on the run's device.
#pragma once

#include <cstdint>
#include <optional>

#include <ATen/ATen.h>

namespace onset::model {

// getrusage's ru_maxrss of this process, in bytes; nullopt when it cannot be read.
std::optional<int64_t> PeakRssBytes();
// The peak of bytes allocated by LibTorch's CUDA caching allocator on `device` since the process
// started; nullopt on the CPU, or in a build without CUDA.
std::optional<int64_t> PeakCudaAllocatedBytes(const at::Device& device);

}  // namespace onset::model
