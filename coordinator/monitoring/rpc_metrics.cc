#include "coordinator/monitoring/rpc_metrics.h"

#include <chrono>

namespace onset::coordinator {
namespace {

class MetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  MetricsInterceptor(RpcMetrics* metrics, const char* method)
      : metrics_(metrics),
        method_(method == nullptr ? "" : method),
        started_(std::chrono::steady_clock::now()) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
      metrics_->Record(method_, static_cast<int>(methods->GetSendStatus().error_code()), seconds);
    }
    methods->Proceed();
  }

 private:
  RpcMetrics* const metrics_;
  const std::string method_;
  const std::chrono::steady_clock::time_point started_;
};

class MetricsInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit MetricsInterceptorFactory(RpcMetrics* metrics) : metrics_(metrics) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new MetricsInterceptor(metrics_, info->method());
  }

 private:
  RpcMetrics* const metrics_;
};

}  // namespace

const char* GrpcCodeName(int code) {
  static const char* const kNames[RpcMetrics::kCodes] = {"OK",
                                                         "CANCELLED",
                                                         "UNKNOWN",
                                                         "INVALID_ARGUMENT",
                                                         "DEADLINE_EXCEEDED",
                                                         "NOT_FOUND",
                                                         "ALREADY_EXISTS",
                                                         "PERMISSION_DENIED",
                                                         "RESOURCE_EXHAUSTED",
                                                         "FAILED_PRECONDITION",
                                                         "ABORTED",
                                                         "OUT_OF_RANGE",
                                                         "UNIMPLEMENTED",
                                                         "INTERNAL",
                                                         "UNAVAILABLE",
                                                         "DATA_LOSS",
                                                         "UNAUTHENTICATED"};
  return code >= 0 && code < RpcMetrics::kCodes ? kNames[code] : "UNKNOWN";
}

RpcMetrics::RpcMetrics(const std::vector<const google::protobuf::ServiceDescriptor*>& services) {
  unknown_.service = kOtherService;
  unknown_.method = kUnknownMethod;
  for (const google::protobuf::ServiceDescriptor* service : services) {
    if (service == nullptr) continue;
    for (int i = 0; i < service->method_count(); ++i) {
      auto counters = std::make_unique<Counters>();
      counters->service = service->full_name();
      counters->method = service->method(i)->name();
      methods_.emplace("/" + counters->service + "/" + counters->method, std::move(counters));
    }
  }
}

void RpcMetrics::Count(Counters& counters, int code, double seconds) {
  if (code < 0 || code >= kCodes) code = 2;  // UNKNOWN
  counters.calls[static_cast<size_t>(code)].fetch_add(1, std::memory_order_relaxed);
  counters.seconds.Observe(seconds);
}

void RpcMetrics::Record(std::string_view full_method, int code, double seconds) {
  auto it = methods_.find(full_method);
  Count(it == methods_.end() ? unknown_ : *it->second, code, seconds);
}

RpcMetrics::Method RpcMetrics::Snapshot(const Counters& counters) {
  Method m;
  m.service = counters.service;
  m.method = counters.method;
  for (size_t i = 0; i < m.calls.size(); ++i) {
    m.calls[i] = counters.calls[i].load(std::memory_order_relaxed);
  }
  m.seconds = counters.seconds.Read();
  return m;
}

std::vector<RpcMetrics::Method> RpcMetrics::Read() const {
  std::vector<Method> out;
  auto called = [](const Method& m) {
    for (uint64_t n : m.calls) {
      if (n > 0) return true;
    }
    return false;
  };
  for (const auto& [name, counters] : methods_) {
    Method m = Snapshot(*counters);
    if (called(m)) out.push_back(std::move(m));
  }
  Method unknown = Snapshot(unknown_);
  if (called(unknown)) out.push_back(std::move(unknown));
  return out;
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
NewRpcMetricsInterceptorFactory(RpcMetrics* metrics) {
  return std::make_unique<MetricsInterceptorFactory>(metrics);
}

}  // namespace onset::coordinator
