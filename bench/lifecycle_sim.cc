// onset-lifecycle-sim: runs the lifecycle simulator (tests/sim/simulation.h) over a range of
// seeds and says how many broke no promise. A bench, not a test: each seed runs the real onsetd
// and workers for about a minute. A failing seed prints its schedule and keeps its files; run it
// again with --seed N --keep.
//
//   build/bin/onset-lifecycle-sim --seeds 1-200 [--workers 3] [--cells 8] [--faults-s 20]
//                                 [--list] [--verbose] [--bin-dir DIR]
//                                 [--stalled-reader-limit-ms 2000]
//
// `--list` prints each seed's schedule (its kinds of action; with --verbose every action) without
// running it, to choose seeds by what they do; `--verbose` prints the schedule of every seed run.
// `--bin-dir` runs other binaries of onsetd, onset-worker and onset (with this version's
// onset-sim-trainer and libonset-sim-full-disk.so beside them); `--stalled-reader-limit-ms 0`
// leaves that flag out, for an onsetd that lacks it (the stalled readers are then skipped).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <CLI/CLI.hpp>

#include "tests/sim/simulation.h"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  CLI::App app{"onset-lifecycle-sim: the lifecycle simulator over many seeds"};
  std::string seeds = "1-20";
  int workers = 3, cells = 8, faults_s = 20;
  int64_t stalled_reader_limit_ms = onset::sim::SimOptions().stalled_reader_limit_ms;
  bool keep = false, no_full_disk = false, verbose = false, list = false;
  std::string bin_dir, dir = (fs::temp_directory_path() / "onset-sim").string();
  {
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) bin_dir = self.parent_path().string();
  }
  app.add_option("--seeds", seeds, "a seed (7) or a range (1-200)")->capture_default_str();
  app.add_option("--seed", seeds, "the same as --seeds");
  app.add_option("--workers", workers, "onset-workers")->capture_default_str();
  app.add_option("--cells", cells, "cells of the study")->capture_default_str();
  app.add_option("--faults-s", faults_s, "seconds of faults per seed")->capture_default_str();
  app.add_option("--bin-dir", bin_dir,
                 "where onsetd, onset-worker, onset and onset-sim-trainer are")
      ->capture_default_str();
  app.add_option("--dir", dir, "scratch directory (a subdirectory per seed)")
      ->capture_default_str();
  app.add_flag("--keep", keep, "keep every seed's files, not only a failing one's");
  app.add_flag("--no-full-disk", no_full_disk, "no full-disk faults");
  app.add_flag("--verbose", verbose, "print every seed's schedule, not only a failing one's");
  app.add_flag("--list", list,
               "print each seed's schedule (the kinds; with --verbose every action) "
               "without running it");
  app.add_option("--stalled-reader-limit-ms", stalled_reader_limit_ms,
                 "onsetd's --stalled-reader-limit-ms; 0 leaves the flag out and skips the "
                 "clients that stop reading")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  uint32_t first = 0, last = 0;
  const size_t dash = seeds.find('-');
  first = static_cast<uint32_t>(std::stoul(seeds.substr(0, dash)));
  last =
      dash == std::string::npos ? first : static_cast<uint32_t>(std::stoul(seeds.substr(dash + 1)));
  int ok = 0, failed = 0;
  double seconds = 0;
  if (list) {
    onset::sim::ScheduleOptions schedule;
    schedule.faults_ms = int64_t{faults_s} * 1000;
    schedule.cells = cells;
    schedule.workers = workers;
    schedule.full_disk = !no_full_disk;
    for (uint32_t seed = first; seed <= last; ++seed) {
      const std::vector<onset::sim::Action> actions = onset::sim::DrawSchedule(seed, schedule);
      std::printf("seed %u: %s\n", seed, onset::sim::KindsOf(actions).c_str());
      for (const onset::sim::Action& a : actions) {
        if (verbose) std::printf("    %s\n", a.Describe().c_str());
      }
    }
    return 0;
  }
  for (uint32_t seed = first; seed <= last; ++seed) {
    onset::sim::SimOptions options;
    options.seed = seed;
    options.bin_dir = bin_dir;
    options.dir = dir + "/seed-" + std::to_string(seed);
    options.keep_dir = keep;
    options.workers = workers;
    options.cells = cells;
    options.faults = std::chrono::seconds(faults_s);
    options.full_disk = !no_full_disk;
    options.stalled_reader_limit_ms = stalled_reader_limit_ms;
    fs::remove_all(options.dir);
    const onset::sim::SimReport report = onset::sim::RunSimulation(options);
    std::fputs(report.Describe(verbose).c_str(), stdout);
    std::fflush(stdout);
    (report.ok() ? ok : failed) += 1;
    seconds += report.seconds;
  }
  std::printf("%d of %d seeds broke no promise (%.0f s in all)\n", ok, ok + failed, seconds);
  return failed == 0 ? 0 : 1;
}
