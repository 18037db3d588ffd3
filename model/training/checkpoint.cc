#include "model/training/checkpoint.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include <ATen/Context.h>
#include <ATen/core/Generator.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include "base/checkpoint_name.h"
#include "base/durable_file.h"
#include "model/config/wsd_trunk.h"

namespace onset::model {
namespace {

constexpr char kMagic[8] = {'o', 'n', 's', 'e', 't', 'c', 'k', 'p'};
constexpr size_t kFooterBytes = 24;
constexpr const char* kPrefix = "ckpt-";
constexpr const char* kSuffix = ".pt";

// CRC-32 (IEEE 802.3, the zlib polynomial).
uint32_t Crc32(const char* data, size_t size) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) {
    crc = table[(crc ^ static_cast<uint8_t>(data[i])) & 0xFF] ^ (crc >> 8);
  }
  return crc ^ 0xFFFFFFFFu;
}

void PutLe(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

uint64_t GetLe(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

// The config as far as it decides the training trajectory: checkpoint cadence and retention
// may change between a run and its resumption.
nlohmann::json TrajectoryJson(nlohmann::json j) {
  if (j.is_object() && j.contains("train") && j["train"].is_object()) {
    for (const char* key : {"checkpoint_every_tokens", "keep_checkpoints", "keep_checkpoints_at"}) {
      j["train"].erase(key);
    }
  }
  return j;
}

at::Generator CudaGenerator(const at::Device& device) {
  return at::globalContext().defaultGenerator(device);
}

at::Tensor GeneratorState(at::Generator gen) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void SetGeneratorState(at::Generator gen, const at::Tensor& state) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state.to(at::kCPU));
}

// Reads a checkpoint file and checks its footer, size, checksum and format version. On success
// the archive is bytes[0, payload_size).
std::optional<CheckpointError> ReadVerified(const std::string& path, std::string* out,
                                            uint64_t* payload_size_out) {
  auto corrupt = [&](const std::string& why) {
    return CheckpointError{CheckpointError::Kind::kCorrupt, path + ": corrupt (" + why + ")"};
  };
  std::string bytes;
  if (auto error = base::ReadFile(path, &bytes)) {
    return CheckpointError{CheckpointError::Kind::kCorrupt, *error};
  }
  if (bytes.size() < kFooterBytes) {
    return corrupt("truncated? " + std::to_string(bytes.size()) + " bytes");
  }
  const char* footer = bytes.data() + bytes.size() - kFooterBytes;
  if (std::memcmp(footer, kMagic, sizeof kMagic) != 0) return corrupt("truncated? no footer");
  const uint64_t payload_size = GetLe(footer + 8, 8);
  if (payload_size != bytes.size() - kFooterBytes) return corrupt("truncated? size mismatch");
  if (GetLe(footer + 16, 4) != Crc32(bytes.data(), payload_size)) {
    return corrupt("checksum mismatch");
  }
  const uint64_t version = GetLe(footer + 20, 4);
  if (version != kCheckpointFormatVersion) {
    return corrupt("format version " + std::to_string(version) + ", this build reads " +
                   std::to_string(kCheckpointFormatVersion));
  }
  *out = std::move(bytes);
  *payload_size_out = payload_size;
  return std::nullopt;
}

}  // namespace

std::string CheckpointFileName(int64_t tokens) { return base::CheckpointFileName(tokens); }

std::vector<CheckpointFile> ListCheckpoints(const std::string& dir) {
  std::vector<CheckpointFile> files;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return files;
  const size_t prefix = std::strlen(kPrefix), suffix = std::strlen(kSuffix);
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() <= prefix + suffix || name.rfind(kPrefix, 0) != 0 ||
        name.compare(name.size() - suffix, suffix, kSuffix) != 0) {
      continue;
    }
    const std::string digits = name.substr(prefix, name.size() - prefix - suffix);
    if (digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    files.push_back({std::stoll(digits), dir + "/" + name});
  }
  ::closedir(d);
  std::sort(files.begin(), files.end(), [](const CheckpointFile& a, const CheckpointFile& b) {
    return a.tokens != b.tokens ? a.tokens < b.tokens : a.path < b.path;
  });
  return files;
}

std::vector<std::string> CheckpointDirsOfCell(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> attempts;
  if (DIR* d = ::opendir(dir.c_str())) {
    const std::string prefix = "attempt-";
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      const std::string digits = name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : "";
      if (digits.empty() || digits.size() > 9 ||
          digits.find_first_not_of("0123456789") != std::string::npos ||
          name != base::AttemptDirName(std::stoi(digits))) {
        continue;
      }
      attempts.emplace_back(std::stoll(digits), dir + "/" + name);
    }
    ::closedir(d);
  }
  std::sort(attempts.rbegin(), attempts.rend());
  std::vector<std::string> dirs;
  struct stat st;
  for (const auto& [n, path] : attempts) {
    dirs.push_back(path);
    const std::string nested = path + "/checkpoints";
    if (::stat(nested.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) dirs.push_back(nested);
  }
  if (::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) dirs.push_back(dir);
  return dirs;
}

int64_t SaveCheckpoint(const std::string& dir, const CellConfig& config,
                       const TrainProgress& progress, const torch::nn::Module& model,
                       const torch::optim::Optimizer& optimizer, const at::Device& device) {
  torch::serialize::OutputArchive archive;
  archive.write("format_version", c10::IValue(static_cast<int64_t>(kCheckpointFormatVersion)));
  archive.write("config", c10::IValue(config.CanonicalText()));
  archive.write("tokens", c10::IValue(progress.tokens));
  archive.write("steps", c10::IValue(progress.steps));
  archive.write("data_position", c10::IValue(progress.data_position));
  archive.write("train_seconds", c10::IValue(progress.train_seconds));
  archive.write("window_loss_sum", c10::IValue(progress.window_loss_sum));
  archive.write("window_steps", c10::IValue(progress.window_steps));
  archive.write("window_tokens", c10::IValue(progress.window_tokens));
  archive.write("window_seconds", c10::IValue(progress.window_seconds));
  archive.write("reported", c10::IValue(progress.reported));
  archive.write("rng_cpu", GeneratorState(at::detail::getDefaultCPUGenerator()));
  if (device.is_cuda()) archive.write("rng_cuda", GeneratorState(CudaGenerator(device)));
  torch::serialize::OutputArchive model_archive(archive.compilation_unit());
  model.save(model_archive);
  archive.write("model", model_archive);
  torch::serialize::OutputArchive optimizer_archive(archive.compilation_unit());
  optimizer.save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);

  std::ostringstream payload_stream;
  archive.save_to(payload_stream);
  std::string bytes = payload_stream.str();
  const uint32_t crc = Crc32(bytes.data(), bytes.size());
  const uint64_t payload_size = bytes.size();
  bytes.append(kMagic, sizeof kMagic);
  PutLe(&bytes, payload_size, 8);
  PutLe(&bytes, crc, 4);
  PutLe(&bytes, kCheckpointFormatVersion, 4);

  base::MakeDirs(dir);
  base::WriteFileDurably(dir + "/" + CheckpointFileName(progress.tokens), bytes);
  return static_cast<int64_t>(bytes.size());
}

std::optional<CheckpointError> LoadCheckpoint(const std::string& path, const CellConfig& config,
                                              const at::Device& device, TrainProgress* progress,
                                              torch::nn::Module* model,
                                              torch::optim::Optimizer* optimizer, ConfigMatch match,
                                              const ProgressCheck& check) {
  using Kind = CheckpointError::Kind;
  auto corrupt = [&](const std::string& why) {
    return CheckpointError{Kind::kCorrupt, path + ": corrupt (" + why + ")"};
  };
  std::string bytes;
  uint64_t payload_size = 0;
  if (auto error = ReadVerified(path, &bytes, &payload_size)) return error;

  // Everything up to the model and optimizer is read before either is touched.
  torch::serialize::InputArchive archive;
  TrainProgress p;
  at::Tensor rng_cpu, rng_cuda;
  std::string stored_config;
  try {
    archive.load_from(bytes.data(), payload_size, device);
    c10::IValue v;
    archive.read("config", v);
    stored_config = v.toStringRef();
    auto read_int = [&](const char* key) {
      archive.read(key, v);
      return v.toInt();
    };
    auto read_double = [&](const char* key) {
      archive.read(key, v);
      return v.toDouble();
    };
    p.tokens = read_int("tokens");
    p.steps = read_int("steps");
    p.data_position = read_int("data_position");
    p.train_seconds = read_double("train_seconds");
    p.window_loss_sum = read_double("window_loss_sum");
    p.window_steps = read_int("window_steps");
    p.window_tokens = read_int("window_tokens");
    p.window_seconds = read_double("window_seconds");
    if (archive.try_read("reported", v)) p.reported = v.toStringRef();
    archive.read("rng_cpu", rng_cpu);
    if (device.is_cuda()) archive.try_read("rng_cuda", rng_cuda);
  } catch (const c10::Error& e) {
    return corrupt(std::string("unreadable archive: ") + e.what_without_backtrace());
  }

  nlohmann::json stored = nlohmann::json::parse(stored_config, nullptr, /*allow_exceptions=*/false);
  if (stored.is_discarded()) return corrupt("unreadable config text");
  const bool stable = match == ConfigMatch::kStablePhase;
  const nlohmann::json want =
      stable ? StablePhaseJson(config.ToJson()) : TrajectoryJson(config.ToJson());
  const nlohmann::json have = stable ? StablePhaseJson(stored) : TrajectoryJson(stored);
  if (want != have) {
    std::string where;
    if (const std::optional<JsonDifference> d = FirstDifference(have, want)) {
      where = d->path + ": checkpoint has " + d->a + ", config has " + d->b;
    }
    if (stable) {
      return CheckpointError{Kind::kOtherConfig,
                             path + ": written for a different stable phase (" + where +
                                 "); a WSD run continues only a checkpoint of its own trunk"};
    }
    return CheckpointError{Kind::kOtherConfig,
                           path + ": written for a different config (" + where +
                               "); resume with the config it was written for, or use another "
                               "--checkpoint-dir"};
  }

  if (check) {
    if (std::optional<std::string> refusal = check(&p)) {
      return CheckpointError{Kind::kUnfit, *refusal};
    }
  }

  torch::serialize::InputArchive model_archive, optimizer_archive;
  archive.read("model", model_archive);
  archive.read("optimizer", optimizer_archive);
  model->load(model_archive);
  optimizer->load(optimizer_archive);
  SetGeneratorState(at::detail::getDefaultCPUGenerator(), rng_cpu);
  if (rng_cuda.defined()) SetGeneratorState(CudaGenerator(device), rng_cuda);
  *progress = p;
  return std::nullopt;
}

std::optional<int64_t> CheckpointFileBytes(const std::string& dir, int64_t tokens) {
  struct stat st;
  const std::string path = dir + "/" + CheckpointFileName(tokens);
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return static_cast<int64_t>(st.st_size);
}

bool LinkCheckpoint(const std::string& from_dir, const std::string& to_dir, int64_t tokens) {
  const std::string from = from_dir + "/" + CheckpointFileName(tokens);
  const std::string to = to_dir + "/" + CheckpointFileName(tokens);
  if (::link(from.c_str(), to.c_str()) == 0 || errno == EEXIST) return true;
  std::error_code ec;
  const std::string temp = to + ".link-tmp";
  std::filesystem::copy_file(from, temp, std::filesystem::copy_options::overwrite_existing, ec);
  if (!ec) std::filesystem::rename(temp, to, ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(temp, ec);
    std::fprintf(stderr, "onset-train: cannot take %s into %s: %s\n", from.c_str(), to_dir.c_str(),
                 why.c_str());
    return false;
  }
  return true;
}

std::vector<std::string> PruneCheckpoints(const std::string& dir, int keep_last,
                                          const std::set<int64_t>& keep_tokens, int64_t keep_from) {
  std::vector<CheckpointFile> files = ListCheckpoints(dir);
  std::vector<std::string> removed;
  if (DIR* d = ::opendir(dir.c_str())) {
    // ckpt-N.pt.tmp-PID-HEX (base::UniqueTempName), or ckpt-N.pt.tmp of older versions.
    const std::string tmp = std::string(kSuffix) + base::kTempInfix;
    const int64_t now = static_cast<int64_t>(::time(nullptr));
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind(kPrefix, 0) != 0 || name.find(tmp) == std::string::npos) continue;
      const std::string path = dir + "/" + name;
      struct stat st {};
      if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      if (now - static_cast<int64_t>(st.st_mtime) < kStaleCheckpointTempAgeSeconds) continue;
      if (::unlink(path.c_str()) == 0) removed.push_back(path);
    }
    ::closedir(d);
  }
  const int64_t n = static_cast<int64_t>(files.size());
  for (int64_t i = 0; i + keep_last < n; ++i) {
    if (keep_tokens.count(files[i].tokens) || files[i].tokens >= keep_from) continue;
    if (::unlink(files[i].path.c_str()) == 0) removed.push_back(files[i].path);
  }
  return removed;
}

std::optional<CheckpointError> LoadCheckpointWeights(const std::string& path,
                                                     const at::Device& device,
                                                     torch::nn::Module* model,
                                                     std::string* config_text) {
  std::string bytes;
  uint64_t payload_size = 0;
  if (auto error = ReadVerified(path, &bytes, &payload_size)) return error;
  torch::serialize::InputArchive archive, model_archive;
  c10::IValue config;
  try {
    archive.load_from(bytes.data(), payload_size, device);
    archive.read("config", config);
    archive.read("model", model_archive);
  } catch (const c10::Error& e) {
    return CheckpointError{
        CheckpointError::Kind::kCorrupt,
        path + ": corrupt (unreadable archive: " + e.what_without_backtrace() + ")"};
  }
  model->load(model_archive);
  *config_text = config.toStringRef();
  return std::nullopt;
}

}  // namespace onset::model
