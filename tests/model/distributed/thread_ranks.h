// Ranks as threads of this process: the one way the trainer's suites run a data-parallel group
// without starting processes. The ranks meet through a c10d store (a fresh HashStore unless one
// is given) and talk over Gloo on the CPU on loopback; NCCL needs GPUs and is not used here.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "model/distributed/c10d_collective.h"

namespace onset::model::testing {

// Runs body(collective, rank) on `world` threads, one rank each, and joins them. Returns the
// first exception a rank threw as "rank R: what", or "" when none did.
inline std::string OnThreadRanks(int world,
                                 const std::function<void(C10dCollective&, int rank)>& body,
                                 c10::intrusive_ptr<c10d::Store> store = {},
                                 std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  at::set_num_threads(1);  // the ranks share this machine's cores
  if (!store) store = c10::make_intrusive<c10d::HashStore>();
  std::vector<std::string> errors(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        C10dCollective collective(store, r, world, at::kCPU, timeout, "127.0.0.1");
        body(collective, r);
      } catch (const std::exception& e) {
        errors[r] = "rank " + std::to_string(r) + ": " + e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& e : errors) {
    if (!e.empty()) return e;
  }
  return "";
}

}  // namespace onset::model::testing
