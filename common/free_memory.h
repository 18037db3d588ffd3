// Giving memory back to the system. A process that briefly held a large structure (a submission's
// hundred thousand cells) keeps the pages it freed: glibc's allocator returns only the top of each
// heap, and small blocks freed in the middle stay mapped, so the process's resident size stays at
// its peak. ReleaseFreeMemory hands every free page back.
#pragma once

namespace onset::common {

// Returns the allocator's free pages to the system (glibc's malloc_trim(0); nothing elsewhere).
// Takes time in proportion to the heap: call it after freeing something large, not per call.
// Thread-safe.
void ReleaseFreeMemory();

}  // namespace onset::common
