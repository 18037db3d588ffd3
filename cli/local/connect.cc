#include "cli/local/connect.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/auth_token.h"
#include "common/random_id.h"

namespace onset::cli {

absl::StatusOr<StudyConnection> Connect(const ConnectOptions& options, std::ostream& err) {
  // The probe's client is kept: its connection is the one the command then uses.
  std::unique_ptr<StudyClient> probed;
  const DataSource source = ResolveDataSource(
      options.coordinator, options.env, options.data_dir, [&](const std::string& address) {
        probed = std::make_unique<StudyClient>(address, options.security);
        return probed->Connects(options.probe_timeout);
      });
  StudyConnection connection;
  if (!source.address.empty()) {
    connection.client = probed != nullptr && probed->address() == source.address
                            ? std::move(probed)
                            : std::make_unique<StudyClient>(source.address, options.security);
    return connection;
  }
  const std::string database =
      source.database.empty()
          ? (std::filesystem::path(options.data_dir) / kDatabaseFileName).string()
          : source.database;
  if (source.database.empty()) {
    if (!source.stale_address.empty()) {
      return absl::UnavailableError(absl::StrCat(
          "nothing answers at ", source.stale_address, " (from ", options.data_dir, "/",
          kAddressFileName, ": the `onset run` that wrote it has ended) and there is no ", database,
          " to read"));
    }
    return absl::UnavailableError(absl::StrCat(
        "no coordinator answers at ", kDefaultAddress, " and there is no ", database,
        " here: `onset run FILE` runs a study and keeps it in ", options.data_dir,
        " (where this command then finds it, also after the run), or name a coordinator with "
        "--coordinator or ONSET_COORDINATOR"));
  }
  if (!options.writer.empty()) {
    return absl::UnavailableError(absl::StrCat(
        "no coordinator is running for ", options.data_dir,
        " (no `onset run` answers there), and `onset ", options.writer, "` ", options.writer_needs,
        ": run `onset run FILE` again (and `onset ", options.writer,
        "` from another terminal while it runs), or start `onsetd --db ", database,
        "` and name it with --coordinator"));
  }
  // The local service listens on loopback only, and this token never leaves the process.
  coordinator::ReadOnlyServerConfig config;
  config.db_path = database;
  config.checkpoint_root = DataDirCheckpointRoot(options.data_dir);
  config.token = common::RandomHex(common::kTokenBytes);
  absl::StatusOr<std::unique_ptr<coordinator::ReadOnlyServer>> local =
      coordinator::ReadOnlyServer::Start(config);
  if (!local.ok()) return local.status();
  connection.client = std::make_unique<StudyClient>(database, (*local)->channel());
  connection.local = std::move(*local);
  err << "reading " << database << " (no coordinator is running for " << options.data_dir << ")\n";
  return connection;
}

std::string DataDirCheckpointRoot(const std::string& data_dir) {
  std::error_code ec;
  const std::filesystem::path root = std::filesystem::path(data_dir) / "checkpoints";
  const std::filesystem::path absolute = std::filesystem::absolute(root, ec);
  return (ec ? root : absolute).lexically_normal().string();
}

absl::StatusOr<StudyConnection> ConnectScratch() {
  coordinator::ReadOnlyServerConfig config;
  config.scratch = true;
  config.shared_checkpoints = true;  // as `onset run` plans
  config.token = common::RandomHex(common::kTokenBytes);
  absl::StatusOr<std::unique_ptr<coordinator::ReadOnlyServer>> local =
      coordinator::ReadOnlyServer::Start(config);
  if (!local.ok()) return local.status();
  StudyConnection connection;
  connection.client = std::make_unique<StudyClient>("a scratch database", (*local)->channel());
  connection.local = std::move(*local);
  return connection;
}

}  // namespace onset::cli
