#include "model/training/memory_peak.h"

#include <sys/resource.h>

#if __has_include(<c10/cuda/CUDACachingAllocator.h>)
#include <c10/cuda/CUDACachingAllocator.h>
#define ONSET_HAVE_CUDA_ALLOCATOR 1
#endif

namespace onset::model {

std::optional<int64_t> PeakRssBytes() {
  struct rusage usage {};
  if (::getrusage(RUSAGE_SELF, &usage) != 0) return std::nullopt;
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

std::optional<int64_t> PeakCudaAllocatedBytes(const at::Device& device) {
#ifdef ONSET_HAVE_CUDA_ALLOCATOR
  if (!device.is_cuda()) return std::nullopt;
  const c10::CachingDeviceAllocator::DeviceStats stats =
      c10::cuda::CUDACachingAllocator::getDeviceStats(device.has_index() ? device.index() : 0);
  return stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)]
      .peak;
#else
  (void)device;
  return std::nullopt;
#endif
}

}  // namespace onset::model
