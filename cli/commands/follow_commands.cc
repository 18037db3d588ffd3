#include "cli/commands/follow_commands.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <thread>

#include <google/protobuf/util/json_util.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "cli/commands/study_commands.h"
#include "cli/exit_codes.h"
#include "cli/views/progress_bars.h"
#include "cli/views/render.h"
#include "cli/views/watch_view.h"
#include "proto/cell_names.h"

namespace onset::cli {
namespace {

constexpr std::chrono::milliseconds kFirstRetry{250};
constexpr std::chrono::milliseconds kMaxRetry{2'000};
constexpr int kLogPage = 5'000;
constexpr int kFollowWaitMs = 20'000;

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool Unreachable(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kDeadlineExceeded;
}

std::string JsonLine(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(message, &json, options).ok()) return "{}";
  return json;
}

// Waits out a broken connection: true to try again, false once it has been down for longer than
// `limit_ms` (the error is then printed).
class Reconnector {
 public:
  explicit Reconnector(int64_t limit_ms) : limit_(std::chrono::milliseconds(limit_ms)) {}

  bool Retry(const absl::Status& status, std::ostream& err) {
    const auto now = std::chrono::steady_clock::now();
    if (!down_) {
      down_ = true;
      since_ = now;
      delay_ = kFirstRetry;
      err << "lost the coordinator (" << status.message() << "); reconnecting\n";
    }
    if (now - since_ > limit_) {
      err << "gave up: the coordinator has been unreachable for "
          << FormatDuration(std::chrono::duration<double>(now - since_).count()) << "\n";
      return false;
    }
    std::this_thread::sleep_for(delay_);
    delay_ = std::min(delay_ * 2, kMaxRetry);
    return true;
  }
  // The connection works again; says so once after an outage.
  void Connected(std::ostream& err, const std::string& how) {
    if (down_) err << "reconnected; " << how << "\n";
    down_ = false;
  }

 private:
  const std::chrono::milliseconds limit_;
  bool down_ = false;
  std::chrono::steady_clock::time_point since_;
  std::chrono::milliseconds delay_ = kFirstRetry;
};

}  // namespace

int WatchCommand(StudyClient& client, const WatchOptions& options, std::ostream& out,
                 std::ostream& err) {
  const bool bars = options.progress_bars && !options.json;
  WatchView view(options.style, bars ? 0 : 10'000);
  LiveBlock block;
  Reconnector reconnector(options.reconnect_for_ms);
  while (true) {
    bool got_message = false;
    absl::Status status =
        client.Watch(options.study, view.last_seq(), [&](const v1::WatchStudyResponse& message) {
          if (!got_message) {
            got_message = true;
            reconnector.Connected(err, absl::StrCat("resumed after event ", view.last_seq()));
          }
          const std::string text = view.Apply(message, NowUnixMs());
          if (options.json) {
            out << JsonLine(message) << "\n";
          } else if (bars) {
            out << block.Above(text) << block.Redraw(ProgressBars(view.study(), options.width));
          } else {
            out << text;
          }
          out << std::flush;
          return options.follow || !view.Finished();
        });
    if (!options.follow && view.Finished()) {
      if (bars) out << block.Clear();
      if (!options.json) out << view.Summary() << "\n";
      return view.ExitCode();
    }
    // OK here means the server ended the stream (it is shutting down): resume like a break.
    if (status.ok() || Unreachable(status)) {
      if (!reconnector.Retry(status.ok() ? absl::UnavailableError("the stream ended") : status,
                             err)) {
        return kExitFailure;
      }
      continue;
    }
    return ReportError(status, err);
  }
}

int LogsCommand(StudyClient& client, const LogsOptions& options, std::ostream& out,
                std::ostream& err) {
  Reconnector reconnector(options.reconnect_for_ms);
  v1::ReadLogsRequest request;
  request.set_study(options.study);
  request.set_cell_id(options.cell);
  request.set_attempt(options.attempt);
  request.set_limit(kLogPage);
  int shown_attempt = -1;        // the attempt whose header was printed
  std::deque<v1::LogLine> tail;  // --tail: the last lines of the backlog, printed once it is read
  bool backlog = true;           // still reading the lines that were there at the start

  auto print = [&](const v1::ReadLogsResponse& r, const v1::LogLine& line) {
    if (options.json) {
      nlohmann::json j = {
          {"study", r.study()},  {"cell_id", r.cell_id()},          {"attempt", r.attempt()},
          {"line", line.line()}, {"at_unix_ms", line.at_unix_ms()}, {"text", line.text()}};
      out << j.dump() << "\n";
    } else {
      out << line.text() << "\n";
    }
  };

  while (true) {
    absl::StatusOr<v1::ReadLogsResponse> r = client.ReadLogs(request);
    if (!r.ok()) {
      if (options.follow && Unreachable(r.status()) && reconnector.Retry(r.status(), err)) {
        continue;
      }
      return ReportError(r.status(), err);
    }
    reconnector.Connected(err, absl::StrCat("resuming after line ", request.after_line()));
    // From the first answer on, name the cell exactly (a prefix could match a cell added later)
    // and stay on the attempt it showed.
    request.set_study(r->study());
    request.set_cell_id(r->cell_id());
    if (r->attempt() == 0) {
      if (shown_attempt != 0) {
        err << "== " << r->study() << "/" << r->cell_id() << " has not started ("
            << options.style.State(r->cell_state()) << ") ==\n";
        shown_attempt = 0;
      }
      if (!options.follow) return kExitOk;
      request.set_wait_ms(kFollowWaitMs);
      continue;
    }
    request.set_attempt(r->attempt());
    if (shown_attempt != r->attempt()) {
      err << "== " << r->study() << "/" << r->cell_id() << " attempt " << r->attempt() << " of "
          << r->latest_attempt() << " on " << r->worker_id() << " ("
          << (r->ended() ? "ended" : "running") << ", cell " << options.style.State(r->cell_state())
          << ") ==\n";
      if (r->first_line() > 1 && request.after_line() < r->first_line()) {
        err << "(lines 1-" << r->first_line() - 1 << " were dropped: only the newest are kept)\n";
      }
      shown_attempt = r->attempt();
    }
    for (const v1::LogLine& line : r->lines()) {
      if (backlog && options.tail > 0) {
        tail.push_back(line);
        if (static_cast<int>(tail.size()) > options.tail) tail.pop_front();
      } else {
        print(*r, line);
      }
      request.set_after_line(line.line());
    }
    out << std::flush;
    // A reply is bounded in bytes as well as lines: only one without lines says the backlog has
    // been read.
    if (r->lines_size() > 0) continue;
    if (backlog) {
      for (const v1::LogLine& line : tail) print(*r, line);
      tail.clear();
      backlog = false;
      out << std::flush;
    }
    if (!options.follow) return kExitOk;
    if (r->ended() && r->latest_attempt() > r->attempt()) {
      // The cell started again: follow the next attempt from its first line.
      request.set_attempt(r->attempt() + 1);
      request.set_after_line(0);
      continue;
    }
    if (r->ended() && wire::Ended(r->cell_state()) && r->latest_attempt() == r->attempt()) {
      return kExitOk;
    }
    request.set_wait_ms(kFollowWaitMs);
  }
}

void AddFollowCommands(CLI::App& app, CommandTable& table) {
  auto watch = std::make_shared<WatchOptions>();
  CLI::App* watch_app = app.add_subcommand(
      "watch", "follow a study live: every cell state change and the progress, until it ends");
  watch_app->add_option("STUDY", watch->study, "study name")->required();
  watch_app->add_flag("--follow", watch->follow,
                      "keep watching after every cell has ended (for cells added later)");
  watch_app->add_flag("--json", watch->json, "print each message as one JSON line");
  table.push_back({watch_app, Needs::kReader, "", "", [watch](const CommandContext& c) {
                     WatchOptions options = *watch;
                     options.style = Style::ForDescriptor(1);
                     options.progress_bars = isatty(1) == 1;
                     options.width = TerminalWidth(1);
                     return WatchCommand(*c.client, options, *c.out, *c.err);
                   }});

  struct LogsFlags {
    LogsOptions options;
    std::vector<std::string> args;  // [STUDY] CELL
  };
  auto logs = std::make_shared<LogsFlags>();
  CLI::App* logs_app = app.add_subcommand("logs", "a cell's trainer log (its stderr)");
  logs_app->add_option("CELL", logs->args, "[STUDY] CELL: the cell's id or a unique prefix of it")
      ->required()
      ->expected(1, 2);
  logs_app->add_flag("-f,--follow", logs->options.follow,
                     "keep printing new lines, and the cell's next attempts, until it ends");
  logs_app->add_option("--attempt", logs->options.attempt, "attempt number (default: the latest)")
      ->check(CLI::NonNegativeNumber);
  logs_app->add_option("--tail", logs->options.tail, "only the last N lines")
      ->check(CLI::NonNegativeNumber);
  logs_app->add_flag("--json", logs->options.json, "print each line as a JSON object");
  table.push_back({logs_app, Needs::kReader, "", "", [logs](const CommandContext& c) {
                     LogsOptions options = logs->options;
                     options.study = logs->args.size() == 2 ? logs->args[0] : "";
                     options.cell = logs->args.back();
                     options.style = Style::ForDescriptor(2);
                     return LogsCommand(*c.client, options, *c.out, *c.err);
                   }});
}

}  // namespace onset::cli
