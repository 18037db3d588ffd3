// gRPC glue for onset.v1.AccessService: tokens by role and the audit log, proto <-> domain types
// and statuses; the logic lives in coordinator/access/ (Credentials) and the AccessStore.
#pragma once

#include "common/grpc_auth.h"
#include "coordinator/access/credentials.h"
#include "coordinator/store/access_store.h"
#include "onset/v1/onset.grpc.pb.h"

namespace onset::coordinator {

// The entries one ReadAudit page holds unless the request asks for another number (at most
// kMaxAuditPage).
inline constexpr int kAuditEntriesPerPage = 100;

// Thread-safe. Every call needs an admin token (method_roles.h); `credentials`, `store` and
// `auth` must outlive the service. Creating and revoking a token are audited.
class AccessServiceImpl final : public onset::v1::AccessService::Service {
 public:
  AccessServiceImpl(Credentials* credentials, AccessStore* store,
                    const common::BearerTokenChecker* auth)
      : credentials_(credentials), store_(store), auth_(auth) {}

  grpc::Status CreateToken(grpc::ServerContext* context,
                           const onset::v1::CreateTokenRequest* request,
                           onset::v1::CreateTokenResponse* response) override;
  grpc::Status ListTokens(grpc::ServerContext* context, const onset::v1::ListTokensRequest* request,
                          onset::v1::ListTokensResponse* response) override;
  grpc::Status RevokeToken(grpc::ServerContext* context,
                           const onset::v1::RevokeTokenRequest* request,
                           onset::v1::RevokeTokenResponse* response) override;
  grpc::Status ReadAudit(grpc::ServerContext* context, const onset::v1::ReadAuditRequest* request,
                         onset::v1::ReadAuditResponse* response) override;

 private:
  Credentials* const credentials_;
  AccessStore* const store_;
  const common::BearerTokenChecker* const auth_;
};

}  // namespace onset::coordinator
