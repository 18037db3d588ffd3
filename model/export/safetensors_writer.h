// The safetensors file format (https://huggingface.co/docs/safetensors), written and read
// without a library:
//
//   [N, u64 little-endian][N bytes of JSON header][data bytes]
//
// The header maps each tensor name to {"dtype": "F32"|"BF16"|..., "shape": [...],
// "data_offsets": [begin, end]} (byte offsets into the data section) and may hold a
// "__metadata__" object of string -> string. Tensors are stored contiguous, row-major and
// little-endian; their byte ranges tile the data section without gaps. The header is padded
// with spaces to a multiple of 8 bytes so that every tensor starts 8-byte aligned.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace onset::model {

struct NamedTensor {
  std::string name;
  at::Tensor tensor;
};

struct SafetensorsContents {
  std::vector<NamedTensor> tensors;  // in data-section order
  std::map<std::string, std::string> metadata;
};

// The file bytes for `contents`, tensors laid out in the given order. Tensors may live on any
// device and be non-contiguous; they are copied. Throws std::invalid_argument on an empty or
// duplicate name, the reserved name "__metadata__", or a dtype outside F64, F32, F16, BF16,
// I64, I32, I16, I8, U8, BOOL.
std::string EncodeSafetensors(const SafetensorsContents& contents);

// Writes EncodeSafetensors(contents) to `path` atomically (durable_file.h). Throws
// std::runtime_error naming the file on I/O errors, std::invalid_argument as above.
void WriteSafetensors(const std::string& path, const SafetensorsContents& contents);

// Parses file bytes into CPU tensors. Returns an error message on anything malformed: a
// truncated file, bad JSON, an unknown dtype, offsets out of range or not tiling the data.
std::optional<std::string> DecodeSafetensors(const std::string& bytes, SafetensorsContents* out);

// Reads and decodes `path`; errors start with the path.
std::optional<std::string> ReadSafetensors(const std::string& path, SafetensorsContents* out);

}  // namespace onset::model
