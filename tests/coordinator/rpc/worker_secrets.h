// The secrets of the workers a test registered over the wire, by worker id, so that its later
// calls can prove who they are (RegisterWorkerResponse.worker_secret).
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "onset/v1/onset.pb.h"

namespace onset::coordinator::testing {

inline std::map<std::string, std::string>& WorkerSecrets() {
  static auto* secrets = new std::map<std::string, std::string>();
  return *secrets;
}

inline void Remember(const v1::RegisterWorkerResponse& registered) {
  if (!registered.worker_id().empty()) {
    WorkerSecrets()[registered.worker_id()] = registered.worker_secret();
  }
}

// The secret `worker_id` was given; "" for a worker this test did not register.
inline std::string SecretOf(const std::string& worker_id) {
  auto it = WorkerSecrets().find(worker_id);
  return it == WorkerSecrets().end() ? std::string() : it->second;
}

}  // namespace onset::coordinator::testing
