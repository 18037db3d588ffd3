// onsetd: the coordinator daemon. Parses flags, loads (or on first start creates) its token file
// (an admin token; others are made with `onset token create`), reads its webhook URLs from a file,
// starts a CoordinatorServer, waits for SIGINT, SIGTERM, SIGHUP or SIGQUIT, shuts down cleanly.
// No flag takes a secret's value: every local user reads a command line.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <pthread.h>
#include <string.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "base/durable_file.h"
#include "common/auth_token.h"
#include "coordinator/notify/notify_url_file.h"
#include "coordinator/server/coordinator_server.h"

namespace {

// The token file's default: next to the database, in the coordinator's data directory.
std::string DefaultTokenFile(const std::string& db_path) {
  return (std::filesystem::path(db_path).parent_path() / onset::common::kTokenFileName).string();
}

// The command line, as given.
struct Flags {
  onset::coordinator::ServerConfig config;
  int64_t lease_ttl_ms = config.lease_ttl.count();
  int64_t heartbeat_ms = config.heartbeat_interval.count();
  std::optional<int64_t> stop_margin_ms;
  int64_t retry_backoff_ms = config.retry.base_backoff.count();
  int64_t health_interval_ms = config.health_interval.count();
  int64_t backup_every_s = 0;
  int64_t stalled_reader_limit_ms = config.stalled_reader_limit.count();
  std::string address_file;
  std::string http_address_file;
  std::string metrics_address_file;
  std::string token_file;
  std::string notify_url_file;
};

void AddFlags(CLI::App& app, Flags& f) {
  onset::coordinator::ServerConfig& config = f.config;
  app.add_option("--db", config.db_path,
                 "SQLite database file (created if missing; locked against a second onsetd)")
      ->required();
  app.add_flag("--init-empty-db", config.init_empty_db,
               "take an existing empty (0-byte) --db file for a new database; without it such a "
               "file is refused, as it may be a database lost to a failed copy");
  app.add_flag("--skip-quick-check", config.skip_quick_check,
               "do not read the whole --db with PRAGMA quick_check at start (about 4 s per GB "
               "when cached) to look for damaged pages");
  app.add_option("--listen", config.listen,
                 "host:port to serve on; port 0 picks a free port. A host other than loopback "
                 "needs --tls-cert/--tls-key or --insecure")
      ->capture_default_str();
  app.add_option("--token-file", f.token_file,
                 "the admin token, created (mode 0600) if missing; other tokens, by role, are made "
                 "with `onset token create` [default: onsetd.token next to --db]");
  app.add_option("--tls-cert", config.tls_cert_file, "serve TLS with this PEM certificate chain");
  app.add_option("--tls-key", config.tls_key_file, "the PEM private key of --tls-cert");
  app.add_flag("--insecure", config.allow_insecure_remote,
               "allow a --listen host other than loopback without TLS (the token crosses the "
               "network in clear text: only on a network you trust)");
  app.add_option("--lease-ttl-ms", f.lease_ttl_ms,
                 "a lease not renewed by a heartbeat for this long expires")
      ->capture_default_str();
  app.add_option("--heartbeat-interval-ms", f.heartbeat_ms, "heartbeat interval told to workers")
      ->capture_default_str();
  app.add_option("--stop-margin-ms", f.stop_margin_ms,
                 "after a lease expires, how long its cell waits before another worker may take "
                 "it: the time its worker may still need to stop the trainer (default: the "
                 "heartbeat interval)")
      ->check(CLI::Range(int64_t{0}, int64_t{3600} * 1000));
  app.add_flag("--requeue-running", config.requeue_running_on_start,
               "requeue cells left running by a previous process instead of waiting for their "
               "leases");
  app.add_option("--max-failures", config.retry.max_failures,
                 "crashes and lost workers a cell may suffer before it stays failed")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--retry-backoff-ms", f.retry_backoff_ms,
                 "wait before the first retry of a failed cell; doubles per failure, up to 30 min")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{24} * 3600 * 1000));
  app.add_option("--checkpoint-root", config.checkpoint_root,
                 "directory all workers share (e.g. on NFS) for the cells' checkpoints, so a cell "
                 "resumes on whichever worker takes it next; default: each worker's work dir");
  app.add_option("--http", config.http_listen,
                 "serve the dashboard on this host:port, e.g. 127.0.0.1:8080 (a token of role read "
                 "or better)");
  app.add_option("--metrics-listen", config.metrics_listen,
                 "serve Prometheus metrics at http://HOST:PORT/metrics, e.g. 127.0.0.1:9464; "
                 "scrapes present a token of role read or better (Authorization: Bearer); "
                 "loopback unless --insecure");
  app.add_option("--metrics-max-studies", config.metrics_max_studies,
                 "studies labelled in onset_cells (those with waiting or running cells first, "
                 "then the newest); the others are summed under study=\"_other\"")
      ->capture_default_str()
      ->check(CLI::Range(0, 10000));
  app.add_option("--tensorboard-dir", config.tensorboard_dir,
                 "write each cell's metric points as a TensorBoard run under this directory as "
                 "they arrive (one run per cell, step = tokens), for `tensorboard --logdir DIR`");
  app.add_option("--mlflow-uri", config.mlflow_uri,
                 "mirror each cell as a run of the MLflow tracking server at this http(s) URL as "
                 "its points arrive (the study as the experiment); a token, if the server wants "
                 "one, comes from MLFLOW_TRACKING_TOKEN");
  app.add_option("--notify-url-file", f.notify_url_file,
                 "POST a JSON event (with a 'text' line, as Slack-style webhooks show it) to each "
                 "http(s) URL in this file (one a line, '#' comments; mode 0600, as webhook URLs "
                 "are secrets) when a study ends, a cell fails for good or the last live worker "
                 "is lost while cells wait");
  app.add_option("--health-interval-ms", f.health_interval_ms,
                 "how often to check that the database can be written, for the gRPC health "
                 "service (grpc.health.v1.Health: SERVING or NOT_SERVING)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{10}, int64_t{3600} * 1000));
  app.add_option("--backup-every", f.backup_every_s,
                 "take an online backup of --db this often (e.g. 6h, 30m, 1d; plain numbers are "
                 "seconds) into --backup-dir; 0: never")
      ->transform(CLI::AsNumberWithUnit(
          std::map<std::string, int64_t>{{"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}},
          CLI::AsNumberWithUnit::CASE_SENSITIVE))
      ->check(CLI::Range(int64_t{0}, int64_t{365} * 86400));
  app.add_option("--backup-dir", config.backup_dir,
                 "where --backup-every writes its copies (onset-YYYYMMDDTHHMMSSZ.db)");
  app.add_option("--backup-keep", config.backup_keep,
                 "how many of the copies it wrote to keep (it deletes only files it wrote and no "
                 "coordinator has served since)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--backup-reserve", config.backup_reserve_bytes,
                 "free space a backup leaves on --backup-dir's disk: it does not start, or stops, "
                 "rather than leave less (e.g. 512M, 2G; plain numbers are bytes)")
      ->transform(CLI::AsSizeValue(/*kb_is_1000=*/false))
      ->capture_default_str();
  app.add_option("--stalled-reader-limit-ms", f.stalled_reader_limit_ms,
                 "how long each message of a streamed reply (a backup, a submission's answer, a "
                 "watch, a metrics stream) may wait for a client that stopped reading before the "
                 "call is cancelled")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{100}, int64_t{3600} * 1000));
  app.add_option("--address-file", f.address_file,
                 "write the bound host:port here once serving (for port 0)");
  app.add_option("--http-address-file", f.http_address_file,
                 "write the dashboard's bound host:port here once serving (for --http ...:0)");
  app.add_option("--metrics-address-file", f.metrics_address_file,
                 "write the metrics page's bound host:port here once serving (for "
                 "--metrics-listen ...:0)");
}

// The token clients must present: that of the token file, made (mode 0600, with its directory)
// on the first start.
absl::StatusOr<std::string> LoadToken(const std::string& token_file) {
  std::error_code ec;
  const std::filesystem::path token_dir = std::filesystem::path(token_file).parent_path();
  if (!token_dir.empty()) std::filesystem::create_directories(token_dir, ec);
  return onset::common::LoadOrCreateTokenFile(token_file);
}

// Why the command line is refused before it is parsed: --notify-url (which onsetd took before
// --notify-url-file) puts a webhook URL, a secret, where every local user reads it. Empty when
// it is not given. The message never repeats the URL.
std::string SecretOnCommandLine(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--notify-url" || arg.rfind("--notify-url=", 0) == 0) {
      return "--notify-url puts a webhook URL, a secret, on the command line, where every local "
             "user reads it (/proc/PID/cmdline): write the URLs into a file only you can read "
             "(one a line, chmod 600) and pass --notify-url-file FILE";
    }
  }
  return "";
}

// The webhook URLs: those of --notify-url-file (notify_url_file.h), none without it.
absl::StatusOr<std::vector<std::string>> NotifyUrls(const Flags& flags) {
  if (flags.notify_url_file.empty()) return std::vector<std::string>();
  return onset::coordinator::ReadNotifyUrlFile(flags.notify_url_file);
}

// Writes `address` to `path` (unless empty) atomically, so that a reader never sees a partial
// address; false, logged, when it cannot.
bool WriteAddress(const char* flag, const std::string& path, const std::string& address) {
  if (path.empty()) return true;
  const std::optional<std::string> error = onset::base::TryWriteFileDurably(path, address + "\n");
  if (error) spdlog::error("cannot write {} {}: {}", flag, path, *error);
  return !error;
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("onsetd"));
  CLI::App app{"onsetd: the onset coordinator (studies, cells, leases, metrics)"};
  Flags flags;
  AddFlags(app, flags);
  if (const std::string refused = SecretOnCommandLine(argc, argv); !refused.empty()) {
    spdlog::error("cannot start: {}", refused);
    return 1;
  }
  CLI11_PARSE(app, argc, argv);
  onset::coordinator::ServerConfig config = flags.config;
  config.lease_ttl = std::chrono::milliseconds(flags.lease_ttl_ms);
  config.heartbeat_interval = std::chrono::milliseconds(flags.heartbeat_ms);
  if (flags.stop_margin_ms) config.stop_margin = std::chrono::milliseconds(*flags.stop_margin_ms);
  config.retry.base_backoff = std::chrono::milliseconds(flags.retry_backoff_ms);
  config.health_interval = std::chrono::milliseconds(flags.health_interval_ms);
  config.backup_every = std::chrono::seconds(flags.backup_every_s);
  config.stalled_reader_limit = std::chrono::milliseconds(flags.stalled_reader_limit_ms);
  const std::string token_file =
      flags.token_file.empty() ? DefaultTokenFile(config.db_path) : flags.token_file;

  // Block the shutdown signals before any thread starts, so every thread inherits the mask and
  // only sigwait below receives them.
  // SIGHUP (the terminal went away) and SIGQUIT stop it as cleanly as SIGTERM.
  sigset_t signals;
  sigemptyset(&signals);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&signals, sig);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<std::vector<std::string>> notify_urls = NotifyUrls(flags);
  if (!notify_urls.ok()) {
    spdlog::error("cannot start: {}", std::string(notify_urls.status().message()));
    return 1;
  }
  config.notify_urls = *std::move(notify_urls);
  config.notify_url_file = flags.notify_url_file;
  if (const char* token = std::getenv("MLFLOW_TRACKING_TOKEN"); token != nullptr) {
    config.mlflow_token = token;
  }

  absl::StatusOr<std::string> token = LoadToken(token_file);
  if (!token.ok()) {
    spdlog::error("cannot start: {}", std::string(token.status().message()));
    return 1;
  }
  config.token = std::move(*token);
  config.token_file = token_file;
  auto server = onset::coordinator::CoordinatorServer::Start(config);
  if (!server.ok()) {
    // The message says what is wrong and what to do; the code adds nothing for a person.
    spdlog::error("cannot start: {}", std::string(server.status().message()));
    return 1;
  }
  spdlog::info("onsetd listening on {} ({}); clients need the token in {} (--token-file or {})",
               (*server)->address(), (*server)->tls() ? "TLS" : "plaintext", token_file,
               "ONSET_TOKEN");
  if (!WriteAddress("--address-file", flags.address_file, (*server)->address()) ||
      !WriteAddress("--http-address-file", flags.http_address_file, (*server)->http_address()) ||
      !WriteAddress("--metrics-address-file", flags.metrics_address_file,
                    (*server)->metrics_address())) {
    (*server)->Shutdown();
    return 1;
  }

  int received = 0;
  sigwait(&signals, &received);
  spdlog::info("received SIG{}, shutting down", sigabbrev_np(received));
  (*server)->Shutdown();
  spdlog::info("onsetd stopped");
  return 0;
}
