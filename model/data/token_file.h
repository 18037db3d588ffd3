// A flat binary file of token ids, as nanoGPT writes them (numpy .tofile of uint16 or uint32,
// native little-endian, no header), mapped read-only into memory. Torch-free.
//
// Opening checks the whole file once: its size must be a whole number of tokens, it must hold at
// least one, and every id must be below the vocabulary's text-token count. Errors name the file
// and, for a bad id, its token index and byte offset, so the culprit can be found with `od`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "model/config/vocab.h"

namespace onset::model {

enum class TokenDtype { kUint16, kUint32 };

// "uint16" / "uint32"; nullopt for anything else.
std::optional<TokenDtype> ParseTokenDtype(const std::string& name);
int TokenBytes(TokenDtype dtype);

class TokenFile {
 public:
  // Maps `path` and validates it against `text_tokens` (ids must lie in [0, text_tokens)).
  // Returns nullptr and sets *error ("PATH: what") when it cannot be used.
  static std::unique_ptr<TokenFile> Open(const std::string& path, TokenDtype dtype, int text_tokens,
                                         std::string* error);
  ~TokenFile();
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  const std::string& path() const { return path_; }
  int64_t size() const { return size_; }  // tokens
  Token at(int64_t i) const {
    return dtype_ == TokenDtype::kUint16
               ? static_cast<const uint16_t*>(data_)[i]
               : static_cast<Token>(static_cast<const uint32_t*>(data_)[i]);
  }

 private:
  TokenFile(std::string path, TokenDtype dtype, const void* data, size_t bytes)
      : path_(std::move(path)),
        dtype_(dtype),
        data_(data),
        bytes_(bytes),
        size_(static_cast<int64_t>(bytes / TokenBytes(dtype))) {}

  std::string path_;
  TokenDtype dtype_;
  const void* data_;
  size_t bytes_;
  int64_t size_;
};

}  // namespace onset::model
