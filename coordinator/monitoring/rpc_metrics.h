// What every gRPC call onsetd answers did: per method, how many calls ended with each status code
// and how long they took, recorded by a server interceptor (NewRpcMetricsInterceptorFactory) and
// read by the /metrics page (coordinator_metrics.h).
//
// Only the methods onsetd serves are labelled: RpcMetrics is made with the descriptors of the
// services it registers (the generated ones, so a method added to the API is counted with no list
// to keep) and holds the counters of each of their methods from the start. A method name comes
// from the wire, and a client may send any: a call to a name that is not served counts under one
// fixed label, service="other", method="unknown", so that no client can add a series to the page
// or take the place of a real method. Streaming calls (WatchStudy, a health Watch) count when they
// end, their duration being the stream's.
//
// Thread-safety: Record and Read may be called from any thread (the set of methods never changes
// after construction; the counters are atomic).
#pragma once

#include <google/protobuf/descriptor.h>
#include <grpcpp/support/server_interceptor.h>

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/latency_histogram.h"

namespace onset::coordinator {

class RpcMetrics {
 public:
  static constexpr int kCodes = 17;  // gRPC's status codes, 0 (OK) to 16 (UNAUTHENTICATED)
  // The label of every call to a method that is not served.
  static constexpr char kOtherService[] = "other";
  static constexpr char kUnknownMethod[] = "unknown";

  // Labels the methods of `services` ("/onset.v1.StudyService/SubmitStudy", ...); a null entry
  // labels nothing.
  explicit RpcMetrics(const std::vector<const google::protobuf::ServiceDescriptor*>& services);
  RpcMetrics(const RpcMetrics&) = delete;
  RpcMetrics& operator=(const RpcMetrics&) = delete;

  // `full_method` as gRPC names it, "/onset.v1.StudyService/SubmitStudy" (any other text counts
  // as unknown); `code` a grpc::StatusCode (outside 0..16: UNKNOWN).
  void Record(std::string_view full_method, int code, double seconds);

  struct Method {
    std::string service;                   // "onset.v1.StudyService"; kOtherService
    std::string method;                    // "SubmitStudy"; kUnknownMethod
    std::array<uint64_t, kCodes> calls{};  // by status code
    common::LatencyHistogram::Snapshot seconds;
  };
  // The served methods called so far, by name, then the unknown label once a call had it: at
  // most one more than the served methods.
  std::vector<Method> Read() const;

  // How many methods are labelled (those of the services given).
  size_t served() const { return methods_.size(); }

 private:
  struct Counters {
    std::string service;
    std::string method;
    std::array<std::atomic<uint64_t>, kCodes> calls{};
    common::LatencyHistogram seconds;
  };
  static void Count(Counters& counters, int code, double seconds);
  static Method Snapshot(const Counters& counters);

  // By full name; made in the constructor and never changed, so read without a lock.
  std::map<std::string, std::unique_ptr<Counters>, std::less<>> methods_;
  Counters unknown_;
};

// gRPC's name of a status code, "OK", "NOT_FOUND", ...; "UNKNOWN" outside 0..16.
const char* GrpcCodeName(int code);

// An interceptor factory for grpc::ServerBuilder that records every call into `metrics`, which
// must outlive the server.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
NewRpcMetricsInterceptorFactory(RpcMetrics* metrics);

}  // namespace onset::coordinator
