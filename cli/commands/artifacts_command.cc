#include "cli/commands/artifacts_command.h"

#include <memory>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/exit_codes.h"
#include "cli/views/table.h"
#include "cli/views/watch_view.h"
#include "proto/cell_names.h"

namespace onset::cli {
namespace {

nlohmann::json CellJson(const v1::DescribeCellResponse& d) {
  nlohmann::json checkpoints = nlohmann::json::array();
  for (const v1::CellCheckpoint& c : d.checkpoints()) {
    checkpoints.push_back({{"tokens", c.tokens()},
                           {"attempt", c.attempt()},
                           {"bytes", c.bytes()},
                           {"path", c.path()},
                           {"present", c.present()}});
  }
  nlohmann::json exports = nlohmann::json::array();
  for (const v1::CellExport& e : d.exports()) {
    exports.push_back({{"format", e.format()},
                       {"host", e.host()},
                       {"path", e.path()},
                       {"bytes", e.bytes()},
                       {"tokens", e.tokens()},
                       {"at_unix_ms", e.at_unix_ms()}});
  }
  nlohmann::json axes = nlohmann::json::object();
  for (const auto& [axis, value] : d.cell().axes()) axes[axis] = value;
  nlohmann::json config = nlohmann::json::parse(d.config_json(), nullptr, false);
  return {{"id", d.cell().id()},
          {"role", d.cell().role().empty() ? "cell" : d.cell().role()},
          {"state", std::string(wire::StateName(d.cell().state()))},
          {"tokens_done", d.cell().tokens_done()},
          {"axes", axes},
          {"config", config.is_discarded() ? nlohmann::json(d.config_json()) : config},
          {"checkpoint_dir", d.checkpoint_dir()},
          {"checkpoints", checkpoints},
          {"exports", exports}};
}

}  // namespace

int ArtifactsCommand(StudyClient& client, const ArtifactsOptions& options, std::ostream& out,
                     std::ostream& err) {
  std::vector<std::string> ids;
  if (!options.cell.empty()) {
    ids.push_back(options.cell);
  } else {
    absl::StatusOr<v1::GetStudyResponse> study = client.Get(options.study);
    if (!study.ok()) return ReportError(study.status(), err);
    for (const v1::Cell& cell : study->cells()) ids.push_back(cell.id());
  }
  std::vector<v1::DescribeCellResponse> cells;
  for (const std::string& id : ids) {
    absl::StatusOr<v1::DescribeCellResponse> d = client.DescribeCell(options.study, id);
    if (!d.ok()) return ReportError(d.status(), err);
    cells.push_back(*std::move(d));
  }
  if (options.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const v1::DescribeCellResponse& d : cells) list.push_back(CellJson(d));
    out << nlohmann::json{{"study", options.study}, {"cells", list}}.dump(2) << "\n";
    return kExitOk;
  }
  Table table({"CELL", "STATE", "TOKENS", "ATTEMPT", "BYTES", "PRESENT", "PATH"});
  for (size_t c : {2u, 3u, 4u}) table.AlignRight(c);
  size_t missing = 0, without_path = 0;
  for (const v1::DescribeCellResponse& d : cells) {
    const std::string state(wire::StateName(d.cell().state()));
    const std::string cell = d.cell().id() + (d.cell().role() == "trunk" ? " (trunk)" : "");
    if (d.checkpoints().empty()) table.AddRow({cell, state, "-", "-", "-", "-", "no checkpoint"});
    for (const v1::CellCheckpoint& c : d.checkpoints()) {
      table.AddRow({cell, state, FormatTokens(c.tokens()), std::to_string(c.attempt()),
                    std::to_string(c.bytes()),
                    c.path().empty() ? "?" : (c.present() ? "yes" : "no"),
                    c.path().empty() ? "(in the worker's work directory)" : c.path()});
      missing += !c.path().empty() && !c.present();
      without_path += c.path().empty();
    }
  }
  if (cells.size() == 1) {
    const v1::DescribeCellResponse& d = cells.front();
    out << "cell " << d.cell().id() << " " << DescribeAxes(d.cell().axes()) << "\n"
        << "checkpoint directory: "
        << (d.checkpoint_dir().empty() ? "none (no checkpoint root)" : d.checkpoint_dir())
        << "\nconfig: " << d.config_json() << "\n";
  }
  out << table.Render();
  // Exports, where the clients that wrote them said they are.
  Table exports({"CELL", "FORMAT", "TOKENS", "BYTES", "WHERE"});
  for (size_t c : {2u, 3u}) exports.AlignRight(c);
  size_t exported = 0;
  for (const v1::DescribeCellResponse& d : cells) {
    for (const v1::CellExport& e : d.exports()) {
      exports.AddRow({d.cell().id(), e.format(), e.tokens() > 0 ? FormatTokens(e.tokens()) : "?",
                      std::to_string(e.bytes()), e.host() + ":" + e.path()});
      ++exported;
    }
  }
  if (exported > 0) out << "\nexports (onset export-model):\n" << exports.Render();
  if (missing > 0) {
    out << missing
        << " recorded checkpoint(s) are no longer there: the trainer keeps the newest "
           "train.keep_checkpoints (and those at train.keep_checkpoints_at)\n";
  }
  if (without_path > 0) {
    out << "the coordinator keeps no checkpoints (no --checkpoint-root): they are in the work "
           "directories of the workers that ran the cells (WORK/CELL)\n";
  }
  return kExitOk;
}

void AddArtifactsCommand(CLI::App& app, CommandTable& table) {
  auto options = std::make_shared<ArtifactsOptions>();
  CLI::App* sub = app.add_subcommand(
      "artifacts",
      "what a study's cells produced and where: checkpoints (tokens, size, path, whether still "
      "there), config and exports, from the coordinator's records");
  sub->add_option("STUDY", options->study, "study name")->required();
  sub->add_option("CELL", options->cell, "one cell: its id, or a unique prefix of one");
  sub->add_flag("--json", options->json, "print JSON (with each cell's config)");
  table.push_back({sub, Needs::kReader, "", "", [options](const CommandContext& c) {
                     return ArtifactsCommand(*c.client, *options, *c.out, *c.err);
                   }});
}

}  // namespace onset::cli
