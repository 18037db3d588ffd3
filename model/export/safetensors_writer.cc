#include "model/export/safetensors_writer.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/durable_file.h"

namespace onset::model {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors stores little-endian data; this writer copies memory as is");

constexpr const char* kMetadataKey = "__metadata__";
// Headers larger than this are refused: they mean a corrupt or hostile size field.
constexpr uint64_t kMaxHeaderBytes = 100 << 20;

const std::vector<std::pair<at::ScalarType, const char*>>& DtypeNames() {
  static const std::vector<std::pair<at::ScalarType, const char*>> names = {
      {at::kDouble, "F64"}, {at::kFloat, "F32"}, {at::kHalf, "F16"},  {at::kBFloat16, "BF16"},
      {at::kLong, "I64"},   {at::kInt, "I32"},   {at::kShort, "I16"}, {at::kChar, "I8"},
      {at::kByte, "U8"},    {at::kBool, "BOOL"}};
  return names;
}

const char* DtypeName(at::ScalarType type) {
  for (const auto& [t, name] : DtypeNames()) {
    if (t == type) return name;
  }
  return nullptr;
}

std::optional<at::ScalarType> DtypeFromName(const std::string& name) {
  for (const auto& [t, n] : DtypeNames()) {
    if (name == n) return t;
  }
  return std::nullopt;
}

}  // namespace

std::string EncodeSafetensors(const SafetensorsContents& contents) {
  nlohmann::json header = nlohmann::json::object();
  std::vector<at::Tensor> data;
  std::set<std::string> seen;
  uint64_t offset = 0;
  for (const NamedTensor& t : contents.tensors) {
    if (t.name.empty() || t.name == kMetadataKey || !seen.insert(t.name).second) {
      throw std::invalid_argument("safetensors: empty, reserved or duplicate tensor name '" +
                                  t.name + "'");
    }
    const char* dtype = DtypeName(t.tensor.scalar_type());
    if (!dtype) {
      throw std::invalid_argument("safetensors: tensor '" + t.name + "' has unsupported dtype " +
                                  std::string(c10::toString(t.tensor.scalar_type())));
    }
    at::Tensor cpu = t.tensor.detach().to(at::kCPU).contiguous();
    const uint64_t bytes = cpu.nbytes();
    header[t.name] = {
        {"dtype", dtype}, {"shape", cpu.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    data.push_back(std::move(cpu));
  }
  if (!contents.metadata.empty()) header[kMetadataKey] = contents.metadata;

  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + text.size() + offset);
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xFF));
  out += text;
  for (const at::Tensor& t : data) {
    out.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
  }
  return out;
}

void WriteSafetensors(const std::string& path, const SafetensorsContents& contents) {
  base::WriteFileDurably(path, EncodeSafetensors(contents));
}

std::optional<std::string> DecodeSafetensors(const std::string& bytes, SafetensorsContents* out) {
  if (bytes.size() < 8) return "truncated: " + std::to_string(bytes.size()) + " bytes";
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[i])) << (8 * i);
  if (n > kMaxHeaderBytes || n > bytes.size() - 8) {
    return "header size " + std::to_string(n) + " does not fit the file";
  }
  const nlohmann::json header =
      nlohmann::json::parse(bytes.substr(8, n), nullptr, /*allow_exceptions=*/false);
  if (!header.is_object()) return "header is not a JSON object";
  const uint64_t data_size = bytes.size() - 8 - n;
  const char* data = bytes.data() + 8 + n;

  SafetensorsContents contents;
  struct Range {
    uint64_t begin, end;
    std::string name;
  };
  std::vector<Range> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == kMetadataKey) {
      if (!entry.is_object()) return "__metadata__ is not an object";
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) return "__metadata__." + key + " is not a string";
        contents.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor '" + name + "': ";
    if (!entry.is_object() || !entry.contains("dtype") || !entry["dtype"].is_string() ||
        !entry.contains("shape") || !entry["shape"].is_array() || !entry.contains("data_offsets") ||
        !entry["data_offsets"].is_array() || entry["data_offsets"].size() != 2) {
      return where + "needs dtype, shape and data_offsets [begin, end]";
    }
    auto type = DtypeFromName(entry["dtype"].get<std::string>());
    if (!type) return where + "unknown dtype " + entry["dtype"].dump();
    std::vector<int64_t> shape;
    uint64_t numel = 1;
    for (const auto& d : entry["shape"]) {
      if (!d.is_number_unsigned()) return where + "shape entries must be integers >= 0";
      shape.push_back(d.get<int64_t>());
      numel *= d.get<uint64_t>();
    }
    const auto& offsets = entry["data_offsets"];
    if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned()) {
      return where + "data_offsets must be integers >= 0";
    }
    const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    if (begin > end || end > data_size) return where + "data_offsets out of range";
    if (end - begin != numel * c10::elementSize(*type)) {
      return where + "data_offsets span " + std::to_string(end - begin) + " bytes, shape and " +
             "dtype need " + std::to_string(numel * c10::elementSize(*type));
    }
    at::Tensor t = at::empty(shape, at::TensorOptions().dtype(*type));
    if (end > begin) std::memcpy(t.data_ptr(), data + begin, end - begin);
    contents.tensors.push_back({name, t});
    ranges.push_back({begin, end, name});
  }
  // The ranges must tile the data section: no overlaps, no gaps, nothing trailing.
  std::vector<size_t> order(ranges.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return ranges[a].begin != ranges[b].begin ? ranges[a].begin < ranges[b].begin
                                              : ranges[a].end < ranges[b].end;
  });
  uint64_t expected = 0;
  for (size_t i : order) {
    if (ranges[i].begin != expected) {
      return "tensor '" + ranges[i].name + "': data_offsets overlap or leave a gap";
    }
    expected = ranges[i].end;
  }
  if (expected != data_size) {
    return "data section has " + std::to_string(data_size - expected) +
           " bytes that belong to no tensor";
  }
  std::vector<NamedTensor> sorted;
  for (size_t i : order) sorted.push_back(std::move(contents.tensors[i]));
  contents.tensors = std::move(sorted);
  *out = std::move(contents);
  return std::nullopt;
}

std::optional<std::string> ReadSafetensors(const std::string& path, SafetensorsContents* out) {
  std::string bytes;
  if (auto error = base::ReadFile(path, &bytes)) return error;
  if (auto error = DecodeSafetensors(bytes, out)) return path + ": " + *error;
  return std::nullopt;
}

}  // namespace onset::model
