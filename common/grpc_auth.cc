#include "common/grpc_auth.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/client_interceptor.h>
#include <spdlog/spdlog.h>
#include <strings.h>

#include <optional>
#include <utility>
#include <vector>

#include "common/grpc_keepalive.h"

namespace onset::common {
namespace {

constexpr char kAuthorizationKey[] = "authorization";
constexpr char kBearerPrefix[] = "Bearer ";

// Adds the authorization header to every call of the channel it is installed on.
class BearerTokenInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit BearerTokenInterceptor(const std::string* header) : header_(header) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->emplace(kAuthorizationKey, *header_);
    }
    methods->Proceed();
  }

 private:
  const std::string* const header_;  // owned by the factory, which outlives its interceptors
};

class BearerTokenInterceptorFactory final
    : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit BearerTokenInterceptorFactory(const std::string& token)
      : header_(kBearerPrefix + token) {}

  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo*) override {
    return new BearerTokenInterceptor(&header_);
  }

 private:
  const std::string header_;
};

}  // namespace

grpc::Status BearerTokenChecker::Check(const grpc::ServerContext& context,
                                       const MethodAccess& method, Caller* caller) const {
  const auto& metadata = context.client_metadata();
  auto [begin, end] = metadata.equal_range(kAuthorizationKey);
  const char* problem = nullptr;
  std::optional<Caller> found;
  if (begin == end) {
    problem = "no token";
  } else if (std::next(begin) != end) {
    problem = "more than one authorization header";
  } else {
    const grpc::string_ref value = begin->second;
    const size_t prefix = sizeof(kBearerPrefix) - 1;
    if (value.size() <= prefix || strncasecmp(value.data(), kBearerPrefix, prefix) != 0) {
      problem = "not a bearer token";
    } else {
      found = tokens_->Find(std::string_view(value.data() + prefix, value.size() - prefix));
      if (!found) problem = "wrong token";
    }
  }
  if (problem != nullptr) {
    LogRefusal(context.peer(), problem);
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, kUnauthenticatedMessage);
  }
  if (!RoleAllows(found->role, method.needs)) {
    // The caller holds a valid token: it may learn what its token is and what it lacks.
    std::string message = "token '" + found->token_name + "' has role " +
                          std::string(RoleName(found->role)) + "; " + std::string(method.method) +
                          " needs " + std::string(RoleName(method.needs));
    LogRefusal(context.peer(), message);
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, std::move(message));
  }
  if (caller != nullptr) *caller = *std::move(found);
  return grpc::Status::OK;
}

void BearerTokenChecker::LogRefusal(const std::string& peer, const std::string& problem) const {
  int64_t left_out = 0;
  {
    MutexLock lock(&mu_);
    if (!refusals_.Occurred(1, &left_out)) return;
  }
  if (left_out == 0) {
    spdlog::warn("refused a call from {}: {}", peer, problem);
  } else {
    spdlog::warn("refused a call from {}: {} ({} more refused since the last such line)", peer,
                 problem, left_out);
  }
}

std::shared_ptr<grpc::ServerCredentials> NewServerCredentials(
    const std::optional<TlsKeyPair>& tls) {
  if (!tls) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({tls->private_key_pem, tls->cert_chain_pem});
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::Channel> NewClientChannel(const std::string& address,
                                                const ClientSecurity& security) {
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (security.tls_roots_pem.empty()) {
    credentials = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = security.tls_roots_pem;
    credentials = grpc::SslCredentials(options);
  }
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> interceptors;
  if (!security.token.empty()) {
    interceptors.push_back(std::make_unique<BearerTokenInterceptorFactory>(security.token));
  }
  return grpc::experimental::CreateCustomChannelWithInterceptors(
      address, credentials, ClientChannelArguments(), std::move(interceptors));
}

}  // namespace onset::common
