#include "coordinator/rpc/access_service.h"

#include <string>

#include "absl/strings/numbers.h"
#include "common/grpc_status.h"
#include "coordinator/access/audit.h"
#include "coordinator/rpc/method_roles.h"

namespace onset::coordinator {
namespace {

void ToProto(const TokenRecord& token, onset::v1::TokenInfo* out) {
  out->set_name(token.name);
  out->set_role(std::string(common::RoleName(token.role)));
  out->set_created_unix_ms(token.created_unix_ms);
  out->set_created_by(token.created_by);
  out->set_revoked_unix_ms(token.revoked_unix_ms);
  out->set_revoked_by(token.revoked_by);
}

std::string Described(const TokenRecord& token) {
  return "token '" + token.name + "' (" + std::string(common::RoleName(token.role)) + ")";
}

}  // namespace

grpc::Status AccessServiceImpl::CreateToken(grpc::ServerContext* context,
                                            const onset::v1::CreateTokenRequest* request,
                                            onset::v1::CreateTokenResponse* response) {
  common::Caller caller;
  if (grpc::Status s = auth_->Check(*context, method_roles::kCreateToken, &caller); !s.ok()) {
    return s;
  }
  absl::StatusOr<Credentials::Created> created =
      credentials_->Create(request->name(), request->role(), caller);
  if (!created.ok()) return common::ToGrpcStatus(created.status());
  Audit(*store_, caller, context->peer(), "token-create", "", Described(created->token));
  ToProto(created->token, response->mutable_token());
  response->set_secret(created->secret);
  return grpc::Status::OK;
}

grpc::Status AccessServiceImpl::ListTokens(grpc::ServerContext* context,
                                           const onset::v1::ListTokensRequest* /*request*/,
                                           onset::v1::ListTokensResponse* response) {
  if (grpc::Status s = auth_->Check(*context, method_roles::kListTokens); !s.ok()) return s;
  absl::StatusOr<std::vector<TokenRecord>> tokens = credentials_->List();
  if (!tokens.ok()) return common::ToGrpcStatus(tokens.status());
  onset::v1::TokenInfo* file = response->add_tokens();
  file->set_name(common::kFileTokenName);
  file->set_role(std::string(common::RoleName(common::Role::kAdmin)));
  file->set_token_file(true);
  for (const TokenRecord& token : *tokens) ToProto(token, response->add_tokens());
  return grpc::Status::OK;
}

grpc::Status AccessServiceImpl::RevokeToken(grpc::ServerContext* context,
                                            const onset::v1::RevokeTokenRequest* request,
                                            onset::v1::RevokeTokenResponse* response) {
  common::Caller caller;
  if (grpc::Status s = auth_->Check(*context, method_roles::kRevokeToken, &caller); !s.ok()) {
    return s;
  }
  absl::StatusOr<TokenRecord> revoked = credentials_->Revoke(request->name(), caller);
  if (!revoked.ok()) return common::ToGrpcStatus(revoked.status());
  Audit(*store_, caller, context->peer(), "token-revoke", "", Described(*revoked));
  ToProto(*revoked, response->mutable_token());
  return grpc::Status::OK;
}

grpc::Status AccessServiceImpl::ReadAudit(grpc::ServerContext* context,
                                          const onset::v1::ReadAuditRequest* request,
                                          onset::v1::ReadAuditResponse* response) {
  if (grpc::Status s = auth_->Check(*context, method_roles::kReadAudit); !s.ok()) return s;
  if (request->page_size() < 0 || request->page_size() > kMaxAuditPage) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "page_size: 0 (the default, " + std::to_string(kAuditEntriesPerPage) +
                            ") to " + std::to_string(kMaxAuditPage));
  }
  AuditQuery query;
  query.study = request->study();
  query.limit = request->page_size() > 0 ? request->page_size() : kAuditEntriesPerPage;
  if (!request->page_token().empty() &&
      (request->page_token().size() > 20 ||
       !absl::SimpleAtoi(request->page_token(), &query.before_id) || query.before_id <= 0)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "page_token: not one this coordinator gave");
  }
  absl::StatusOr<AuditPage> page = store_->ReadAudit(query);
  if (!page.ok()) return common::ToGrpcStatus(page.status());
  for (const AuditRecord& entry : page->entries) {
    onset::v1::AuditEntry* out = response->add_entries();
    out->set_id(entry.id);
    out->set_at_unix_ms(entry.at_unix_ms);
    out->set_token_name(entry.token_name);
    out->set_role(std::string(common::RoleName(entry.role)));
    out->set_peer(entry.peer);
    out->set_action(entry.action);
    out->set_study(entry.study);
    out->set_detail(entry.detail);
  }
  if (page->next_before_id > 0) response->set_next_page_token(std::to_string(page->next_before_id));
  return grpc::Status::OK;
}

}  // namespace onset::coordinator
