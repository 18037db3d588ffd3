// The role each method of the API needs (common/access_role.h), in one table: every handler
// checks its call against its entry here (common::BearerTokenChecker::Check), the tests call
// every method with a token one role too weak, and docs/operating-onsetd.md ("Credentials and
// roles") prints the same table.
//
//   read    StudyService: ListStudies, GetStudy, GetResults, WatchStudy, ReadLogs, StreamMetrics,
//           DescribeCell (a cell's config and where its checkpoints are: what reading results
//           and exporting a model need)
//   submit  StudyService: SubmitStudy (dry runs too: they plan on the coordinator's state),
//           CancelCells, RerunCells, RecordExport (it adds to what `onset artifacts` lists)
//   worker  WorkerService: every method
//   admin   StudyService: Backup (the whole database), ListWorkers (hosts, Slurm jobs, devices:
//           the cluster's layout); AccessService: every method (tokens, the audit log)
//
// gRPC's health service (grpc.health.v1.Health) needs no token: it tells only whether the
// coordinator can write its database, which a load balancer's probe asks.
#pragma once

#include <array>
#include <string_view>

#include "common/access_role.h"

namespace onset::coordinator::method_roles {

using common::MethodAccess;
using common::Role;

// StudyService.
inline constexpr MethodAccess kSubmitStudy{"SubmitStudy", Role::kSubmit};
inline constexpr MethodAccess kListStudies{"ListStudies", Role::kRead};
inline constexpr MethodAccess kListWorkers{"ListWorkers", Role::kAdmin};
inline constexpr MethodAccess kGetStudy{"GetStudy", Role::kRead};
inline constexpr MethodAccess kGetResults{"GetResults", Role::kRead};
inline constexpr MethodAccess kCancelCells{"CancelCells", Role::kSubmit};
inline constexpr MethodAccess kRerunCells{"RerunCells", Role::kSubmit};
inline constexpr MethodAccess kWatchStudy{"WatchStudy", Role::kRead};
inline constexpr MethodAccess kReadLogs{"ReadLogs", Role::kRead};
inline constexpr MethodAccess kStreamMetrics{"StreamMetrics", Role::kRead};
inline constexpr MethodAccess kDescribeCell{"DescribeCell", Role::kRead};
inline constexpr MethodAccess kBackup{"Backup", Role::kAdmin};
inline constexpr MethodAccess kRecordExport{"RecordExport", Role::kSubmit};

// WorkerService.
inline constexpr MethodAccess kRegisterWorker{"RegisterWorker", Role::kWorker};
inline constexpr MethodAccess kLeaseJob{"LeaseJob", Role::kWorker};
inline constexpr MethodAccess kHeartbeat{"Heartbeat", Role::kWorker};
inline constexpr MethodAccess kReportMetrics{"ReportMetrics", Role::kWorker};
inline constexpr MethodAccess kFinishJob{"FinishJob", Role::kWorker};
inline constexpr MethodAccess kAppendLogs{"AppendLogs", Role::kWorker};
inline constexpr MethodAccess kDeregisterWorker{"DeregisterWorker", Role::kWorker};

// AccessService.
inline constexpr MethodAccess kCreateToken{"CreateToken", Role::kAdmin};
inline constexpr MethodAccess kListTokens{"ListTokens", Role::kAdmin};
inline constexpr MethodAccess kRevokeToken{"RevokeToken", Role::kAdmin};
inline constexpr MethodAccess kReadAudit{"ReadAudit", Role::kAdmin};

// A method with its service's full name ("onset.v1.StudyService").
struct ServiceMethod {
  std::string_view service;
  MethodAccess access;
};

inline constexpr std::string_view kStudyService = "onset.v1.StudyService";
inline constexpr std::string_view kWorkerService = "onset.v1.WorkerService";
inline constexpr std::string_view kAccessService = "onset.v1.AccessService";

// Every method of every service, in the order of proto/onset/v1/onset.proto.
inline constexpr std::array kEveryMethod = {
    ServiceMethod{kStudyService, kSubmitStudy},    ServiceMethod{kStudyService, kListStudies},
    ServiceMethod{kStudyService, kListWorkers},    ServiceMethod{kStudyService, kGetStudy},
    ServiceMethod{kStudyService, kGetResults},     ServiceMethod{kStudyService, kCancelCells},
    ServiceMethod{kStudyService, kRerunCells},     ServiceMethod{kStudyService, kWatchStudy},
    ServiceMethod{kStudyService, kReadLogs},       ServiceMethod{kStudyService, kStreamMetrics},
    ServiceMethod{kStudyService, kDescribeCell},   ServiceMethod{kStudyService, kBackup},
    ServiceMethod{kStudyService, kRecordExport},   ServiceMethod{kWorkerService, kRegisterWorker},
    ServiceMethod{kWorkerService, kLeaseJob},      ServiceMethod{kWorkerService, kHeartbeat},
    ServiceMethod{kWorkerService, kReportMetrics}, ServiceMethod{kWorkerService, kFinishJob},
    ServiceMethod{kWorkerService, kAppendLogs},    ServiceMethod{kWorkerService, kDeregisterWorker},
    ServiceMethod{kAccessService, kCreateToken},   ServiceMethod{kAccessService, kListTokens},
    ServiceMethod{kAccessService, kRevokeToken},   ServiceMethod{kAccessService, kReadAudit},
};

}  // namespace onset::coordinator::method_roles
