#include "model/distributed/dist_env.h"

#include <cstdlib>

namespace onset::model {
namespace {

// A decimal integer in [lo, hi], or nullopt.
std::optional<int> ParseInt(const char* text, int lo, int hi) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (*end != '\0' || v < lo || v > hi) return std::nullopt;
  return static_cast<int>(v);
}

std::string Quoted(const char* text) {
  return text == nullptr ? "nothing" : "'" + std::string(text) + "'";
}

}  // namespace

std::optional<std::string> ReadDistEnv(const EnvLookup& env, DistEnv* out) {
  DistEnv d;
  const char* world = env("WORLD_SIZE");
  if (world == nullptr) {
    *out = d;
    return std::nullopt;
  }
  constexpr int kMaxRanks = 1 << 20;
  auto world_size = ParseInt(world, 1, kMaxRanks);
  if (!world_size) return "WORLD_SIZE: must be a number of ranks >= 1, got " + Quoted(world);
  d.world_size = *world_size;
  if (!d.distributed()) {
    *out = d;
    return std::nullopt;
  }
  const char* rank = env("RANK");
  auto r = ParseInt(rank, 0, d.world_size - 1);
  if (!r) {
    return "RANK: must be a rank between 0 and " + std::to_string(d.world_size - 1) + ", got " +
           Quoted(rank);
  }
  d.rank = *r;
  const char* local_world = env("LOCAL_WORLD_SIZE");
  if (local_world != nullptr) {
    auto n = ParseInt(local_world, 1, d.world_size);
    if (!n) {
      return "LOCAL_WORLD_SIZE: must be between 1 and WORLD_SIZE (" + std::to_string(d.world_size) +
             "), got " + Quoted(local_world);
    }
    d.local_world_size = *n;
  }
  const char* local_rank = env("LOCAL_RANK");
  const int max_local = local_world != nullptr ? d.local_world_size - 1 : kMaxRanks;
  auto lr = ParseInt(local_rank, 0, max_local);
  if (!lr) {
    return "LOCAL_RANK: must be this rank's index on its machine" +
           std::string(local_world != nullptr ? " (below LOCAL_WORLD_SIZE)" : "") + ", got " +
           Quoted(local_rank);
  }
  d.local_rank = *lr;

  const char* store_file = env("ONSET_STORE_FILE");
  if (store_file != nullptr && *store_file != '\0') {
    d.store_file = store_file;
  } else {
    const char* addr = env("MASTER_ADDR");
    if (addr == nullptr || *addr == '\0') {
      return "MASTER_ADDR: must name rank 0's host (or ONSET_STORE_FILE a shared file) when "
             "WORLD_SIZE is " +
             std::to_string(d.world_size);
    }
    d.master_addr = addr;
    const char* port = env("MASTER_PORT");
    auto p = ParseInt(port, 1, 65535);
    if (!p) return "MASTER_PORT: must be a port number between 1 and 65535, got " + Quoted(port);
    d.master_port = *p;
  }
  *out = d;
  return std::nullopt;
}

bool IsLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace onset::model
