// A training step allocates and frees the same large tensors every step (activations, their
// gradients). glibc hands blocks above its mmap threshold (128 KiB at first, raised as such
// blocks are freed, up to 32 MiB) back to the kernel when they are freed, and trims the heap's
// free top above its trim threshold, so the next step's tensors fault their pages in again: on
// the virtual machines onset is tried on, that cost 15-20% of a small model's CPU step
// (docs/cpu-benchmark.md). KeepFreedMemory makes the process keep what it frees for the next
// step: blocks up to 32 MiB come from the heap, and the heap is trimmed only past 1 GiB free.
// The process's resident size then stays at its peak, which for a trainer is its steady state.
#pragma once

namespace onset::model {

// Sets glibc's mmap and trim thresholds as above; false if glibc refused either (another C
// library: nothing changed).
bool KeepFreedMemory();

}  // namespace onset::model
