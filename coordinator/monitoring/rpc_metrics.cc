#include "coordinator/monitoring/rpc_metrics.h"

#include <chrono>

namespace onset::coordinator {
namespace {

constexpr char kOther[] = "other";

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

RpcMetrics::Counters* RpcMetrics::Find(std::string_view full_method) {
  common::MutexLock lock(&mu_);
  auto it = methods_.find(full_method);
  if (it != methods_.end()) return it->second.get();
  // One slot is kept for "other", so the page never holds more than kMaxMethods names.
  const std::string key = methods_.size() + 1 < kMaxMethods ? std::string(full_method) : kOther;
  std::unique_ptr<Counters>& slot = methods_[key];
  if (!slot) slot = std::make_unique<Counters>();
  return slot.get();
}

void RpcMetrics::Record(std::string_view full_method, int code, double seconds) {
  Counters* counters = Find(full_method);
  if (code < 0 || code >= kCodes) code = 2;  // UNKNOWN
  counters->calls[static_cast<size_t>(code)].fetch_add(1, std::memory_order_relaxed);
  counters->seconds.Observe(seconds);
}

std::vector<RpcMetrics::Method> RpcMetrics::Read() const {
  std::vector<Method> out;
  common::MutexLock lock(&mu_);
  for (const auto& [name, counters] : methods_) {
    Method m;
    // "/package.Service/Method"
    const std::string_view full(name);
    const size_t slash = full.rfind('/');
    if (name == kOther || full.size() < 2 || full[0] != '/' || slash == 0 ||
        slash == std::string_view::npos) {
      m.service = kOther;
      m.method = name == kOther ? kOther : name;
    } else {
      m.service = std::string(full.substr(1, slash - 1));
      m.method = std::string(full.substr(slash + 1));
    }
    for (size_t i = 0; i < m.calls.size(); ++i) {
      m.calls[i] = counters->calls[i].load(std::memory_order_relaxed);
    }
    m.seconds = counters->seconds.Read();
    out.push_back(std::move(m));
  }
  return out;
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
NewRpcMetricsInterceptorFactory(RpcMetrics* metrics) {
  return std::make_unique<MetricsInterceptorFactory>(metrics);
}

}  // namespace onset::coordinator
