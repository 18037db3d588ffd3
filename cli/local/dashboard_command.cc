#include "cli/local/dashboard_command.h"

#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>

#include "cli/client/study_client.h"
#include "cli/exit_codes.h"
#include "common/auth_token.h"
#include "common/random_id.h"
#include "coordinator/server/read_only_server.h"

namespace onset::cli {

namespace fs = std::filesystem;

int DashboardCommand(const DashboardOptions& options, const std::atomic<bool>& interrupted,
                     std::ostream& out, std::ostream& err) {
  const fs::path dir(options.data_dir);
  const std::string database = (dir / kDatabaseFileName).string();
  std::error_code ec;
  if (!fs::is_regular_file(database, ec)) {
    err << "no database " << database << ": `onset run FILE` makes one there\n";
    return kExitFailure;
  }
  // The run's token, so that a link or a browser that kept it still gets in.
  std::string token;
  absl::StatusOr<std::string> kept = common::ReadTokenFile((dir / common::kTokenFileName).string());
  if (kept.ok()) {
    token = *kept;
  } else if (absl::IsNotFound(kept.status())) {
    token = common::RandomHex(common::kTokenBytes);
  } else {
    err << kept.status().message() << "\n";
    return kExitFailure;
  }

  coordinator::ReadOnlyServerConfig config;
  config.db_path = database;
  config.token = token;
  config.http_listen = options.http;
  absl::StatusOr<std::unique_ptr<coordinator::ReadOnlyServer>> server =
      coordinator::ReadOnlyServer::Start(config);
  if (!server.ok()) {
    err << server.status().message() << "\n";
    return absl::IsInvalidArgument(server.status()) ? kExitBadInput : kExitFailure;
  }

  std::string url = "http://" + (*server)->http_address() + "/#token=" + token;
  {
    // The newest study: the one a link most likely wants.
    StudyClient client(database, (*server)->channel());
    absl::StatusOr<v1::ListStudiesResponse> studies = client.List();
    if (studies.ok() && studies->studies_size() > 0) {
      url += "&study=" + studies->studies(studies->studies_size() - 1).name();
    }
  }
  out << url << std::endl;
  err << "serving the dashboard of " << database << ", read-only, until Ctrl-C\n";
  while (!interrupted) std::this_thread::sleep_for(std::chrono::milliseconds(options.poll_ms));
  (*server)->Shutdown();
  return kExitInterrupted;
}

}  // namespace onset::cli
