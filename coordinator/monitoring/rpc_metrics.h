// What every gRPC call onsetd answers did: per method, how many calls ended with each status code
// and how long they took, recorded by a server interceptor (NewRpcMetricsInterceptorFactory) and
// read by the /metrics page (coordinator_metrics.h).
//
// The methods are those of the services onsetd registers, but a method name comes from the
// wire: at most kMaxMethods distinct names are kept, later ones count under "other", so that no
// client can grow the page without bound. Streaming calls (WatchStudy, a health Watch) count when
// they end, their duration being the stream's.
//
// Thread-safety: Record and Read may be called from any thread.
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <grpcpp/support/server_interceptor.h>

#include "common/latency_histogram.h"
#include "common/mutex.h"

namespace onset::coordinator {

class RpcMetrics {
 public:
  static constexpr size_t kMaxMethods = 64;
  static constexpr int kCodes = 17;  // gRPC's status codes, 0 (OK) to 16 (UNAUTHENTICATED)

  // `full_method` as gRPC names it, "/onset.v1.StudyService/Submit"; `code` a grpc::StatusCode.
  void Record(std::string_view full_method, int code, double seconds);

  struct Method {
    std::string service;                   // "onset.v1.StudyService"; "other" past kMaxMethods
    std::string method;                    // "Submit"
    std::array<uint64_t, kCodes> calls{};  // by status code
    common::LatencyHistogram::Snapshot seconds;
  };
  // Every method called so far, by name.
  std::vector<Method> Read() const;

 private:
  struct Counters {
    std::array<std::atomic<uint64_t>, kCodes> calls{};
    common::LatencyHistogram seconds;
  };
  Counters* Find(std::string_view full_method) ABSL_LOCKS_EXCLUDED(mu_);

  mutable common::Mutex mu_;
  std::map<std::string, std::unique_ptr<Counters>, std::less<>> methods_ ABSL_GUARDED_BY(mu_);
};

// gRPC's name of a status code, "OK", "NOT_FOUND", ...; "UNKNOWN" outside 0..16.
const char* GrpcCodeName(int code);

// An interceptor factory for grpc::ServerBuilder that records every call into `metrics`, which
// must outlive the server.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
NewRpcMetricsInterceptorFactory(RpcMetrics* metrics);

}  // namespace onset::coordinator
