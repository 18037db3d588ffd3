// A bounded mutation runner for LLVMFuzzerTestOneInput, for compilers without libFuzzer:
//
//   study_file_fuzz [--seconds N] [--seed S] [--max-len BYTES] [--crash-dir DIR] CORPUS_DIR...
//
// Runs every file of the corpus directories, then mutates them (byte flips, inserts, deletes,
// duplicated ranges, splices, and YAML-shaped tokens: anchors, aliases, brackets, huge numbers)
// until N seconds have passed (default 30). The same seed gives the same inputs. An input that
// crashes (under ASan/UBSan) or runs over 10 s is written to DIR/crash-SEED-ITERATION (default:
// the working directory) before the process dies, and the line to rerun it is printed.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#if defined(__has_include)
#if __has_include(<sanitizer/common_interface_defs.h>)
#include <sanitizer/common_interface_defs.h>
#define ONSET_HAVE_SANITIZER_API 1
#endif
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

constexpr unsigned kHangSeconds = 10;

// The input being run, for the crash handlers (written with async-signal-safe calls only).
const std::string* g_current = nullptr;
char g_crash_path[4096] = "";

void SaveCurrent() {
  if (g_current == nullptr || g_crash_path[0] == '\0') return;
  const int fd = ::open(g_crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  size_t done = 0;
  while (done < g_current->size()) {
    const ssize_t n = ::write(fd, g_current->data() + done, g_current->size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  const char note[] = "study_file_fuzz: the input is saved in ";
  (void)!::write(2, note, sizeof note - 1);
  (void)!::write(2, g_crash_path, std::strlen(g_crash_path));
  (void)!::write(2, "\n", 1);
}

void OnHang(int) {
  const char note[] = "study_file_fuzz: an input ran longer than 10 s\n";
  (void)!::write(2, note, sizeof note - 1);
  SaveCurrent();
  ::_exit(1);
}

void OnFatalSignal(int sig) {
  SaveCurrent();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

const char* const kTokens[] = {
    "&a ",
    "*a",
    "<<: *a\n",
    "[",
    "]",
    "{",
    "}",
    ", ",
    ": ",
    "\n",
    "\n  ",
    "- ",
    "---\n",
    "...\n",
    "#",
    "\"",
    "'",
    "\\",
    "!!str ",
    "? ",
    "|\n  ",
    "name: x\n",
    "grid:\n",
    "  seeds: ",
    "  zip:\n",
    "exclude:\n",
    "depends:\n",
    "by: arch",
    "values: ",
    "default: ",
    "model.",
    "train.",
    "eval.",
    "data.",
    "1e400",
    "1e-400",
    "4e-320",
    "-0",
    "0x10",
    "999999999999999999999999",
    "9e18",
    "1K",
    "2.5M",
    "3B",
    ".inf",
    ".nan",
    "~",
    "null",
    "true",
    "\xff",
    "\xc3\xa9",
    "\xe2\x82",
    "\t",
    "\r\n",
    "%YAML 1.2\n",
    "arch: swa",
    "window: ",
    "seq_len: ",
    "tokens: ",
    "lr: 0",
    "niah_lengths: [",
};

std::string Mutate(std::string s, const std::vector<std::string>& corpus, std::mt19937_64& rng) {
  auto pick = [&rng](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  const int rounds = 1 + static_cast<int>(pick(4));
  for (int r = 0; r < rounds; ++r) {
    switch (pick(7)) {
      case 0:  // flip a byte
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << pick(8));
        break;
      case 1:  // insert a random byte
        s.insert(s.begin() + static_cast<std::ptrdiff_t>(pick(s.size() + 1)),
                 static_cast<char>(pick(256)));
        break;
      case 2: {  // delete a range
        if (s.empty()) break;
        const size_t at = pick(s.size());
        s.erase(at, 1 + pick(std::min<size_t>(16, s.size() - at)));
        break;
      }
      case 3: {  // duplicate a range
        if (s.empty()) break;
        const size_t at = pick(s.size());
        const size_t len = 1 + pick(std::min<size_t>(64, s.size() - at));
        s.insert(pick(s.size() + 1), s.substr(at, len));
        break;
      }
      case 4:
      case 5:  // a YAML-shaped token
        s.insert(pick(s.size() + 1), kTokens[pick(sizeof kTokens / sizeof kTokens[0])]);
        break;
      case 6: {  // splice with another entry
        const std::string& other = corpus[pick(corpus.size())];
        if (other.empty()) break;
        const size_t from = pick(other.size());
        s = s.substr(0, pick(s.size() + 1)) + other.substr(from, 1 + pick(other.size() - from));
        break;
      }
    }
  }
  return s;
}

int Usage() {
  std::fprintf(stderr,
               "usage: study_file_fuzz [--seconds N] [--seed S] [--max-len BYTES] "
               "[--crash-dir DIR] CORPUS_DIR...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 30;
  uint64_t seed = 1;
  size_t max_len = 4096;
  std::string crash_dir = ".";
  std::vector<std::string> dirs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 < argc && a == "--seconds") {
      seconds = std::atof(argv[++i]);
    } else if (i + 1 < argc && a == "--seed") {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (i + 1 < argc && a == "--max-len") {
      max_len = std::strtoull(argv[++i], nullptr, 10);
    } else if (i + 1 < argc && a == "--crash-dir") {
      crash_dir = argv[++i];
    } else if (!a.empty() && a[0] == '-') {
      return Usage();
    } else {
      dirs.push_back(a);
    }
  }
  if (dirs.empty()) return Usage();

  std::vector<std::string> corpus;
  for (const std::string& dir : dirs) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      corpus.push_back(text.str());
    }
    if (ec) {
      std::fprintf(stderr, "study_file_fuzz: %s: %s\n", dir.c_str(), ec.message().c_str());
      return 2;
    }
  }
  if (corpus.empty()) {
    std::fprintf(stderr, "study_file_fuzz: no corpus files\n");
    return 2;
  }

  ::signal(SIGALRM, OnHang);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(sig, OnFatalSignal);
#ifdef ONSET_HAVE_SANITIZER_API
  __sanitizer_set_death_callback(SaveCurrent);
#endif

  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  std::mt19937_64 rng(seed);
  uint64_t runs = 0;
  auto run = [&](const std::string& input) {
    std::snprintf(g_crash_path, sizeof g_crash_path, "%s/crash-%llu-%llu", crash_dir.c_str(),
                  static_cast<unsigned long long>(seed), static_cast<unsigned long long>(runs));
    g_current = &input;
    ::alarm(kHangSeconds);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
    ::alarm(0);
    g_current = nullptr;
    ++runs;
  };
  for (const std::string& input : corpus) run(input);
  while (std::chrono::steady_clock::now() < deadline) {
    std::string input = Mutate(corpus[rng() % corpus.size()], corpus, rng);
    if (input.size() > max_len) input.resize(max_len);
    run(input);
    // Inputs that parse or fail late are good seeds for more.
    if (corpus.size() < 10'000 && rng() % 64 == 0) corpus.push_back(std::move(input));
  }
  std::printf("study_file_fuzz: %llu inputs in %.0f s (seed %llu), no crash\n",
              static_cast<unsigned long long>(runs), seconds,
              static_cast<unsigned long long>(seed));
  return 0;
}
