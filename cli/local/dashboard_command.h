// `onset dashboard`: the dashboard of a data directory (./onset-data unless --data-dir or
// ONSET_DATA_DIR name another) without a coordinator. Serves the page and its API
// (coordinator/dashboard/dashboard_api.h) over DIR/onset.db opened read-only, whether or not an
// `onset run` is writing it meanwhile (the page then follows the run as it commits), with the
// token of DIR/onsetd.token, so that a link made during the run still works.
#pragma once

#include <atomic>
#include <ostream>
#include <string>

#include "cli/client/address.h"

namespace onset::cli {

struct DashboardOptions {
  std::string http = "127.0.0.1:8080";  // loopback host:port; port 0 picks a free one
  std::string data_dir = kDefaultDataDir;
  int poll_ms = 100;  // how often `interrupted` is looked at
};

// Prints the page's address on `out`, one line with the token and the newest study:
// "http://127.0.0.1:8080/#token=TOKEN&study=demo" (no study when there is none), then serves
// until `interrupted` (set from a signal watcher). The token is that of <data_dir>/onsetd.token;
// when the file does not exist, one made for this process only (no file is written).
// Exit codes (cli/exit_codes.h): 130 once interrupted; 1 when there is no database, it cannot be
// read (another schema version: the message says what to do), or the port cannot be bound;
// 2 for an --http address that is malformed or not loopback.
int DashboardCommand(const DashboardOptions& options, const std::atomic<bool>& interrupted,
                     std::ostream& out, std::ostream& err);

}  // namespace onset::cli
