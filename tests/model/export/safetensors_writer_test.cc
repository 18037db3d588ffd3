// The safetensors writer and reader: round trips, the byte layout the format prescribes,
// the reader's refusal of malformed files, and what an export holds.
#include "model/export/safetensors_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "base/cell_id.h"
#include "model/export/export.h"
#include "tests/testing/pinned_cell.h"
#include "tests/testing/temp_dir.h"

namespace onset::model {
namespace {

// One intra-op thread: the suite shares a small machine.
class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    threads_ = at::get_num_threads();
    at::set_num_threads(1);
  }
  void TearDown() override { at::set_num_threads(threads_); }

 private:
  int threads_ = 1;
};

uint64_t HeaderSize(const std::string& bytes) {
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[i])) << (8 * i);
  return n;
}

TEST_F(SafetensorsTest, RoundTripsDtypesShapesAndMetadata) {
  at::manual_seed(1);
  SafetensorsContents in;
  in.tensors = {
      {"a.weight", at::randn({3, 5})},
      {"b", at::randn({2, 1, 4}).to(at::kBFloat16)},
      {"scalar", at::tensor(7.5f).reshape({})},
      {"ids", at::arange(6, at::kLong).view({2, 3})},
      {"empty", at::zeros({0, 4})},
      {"strided", at::randn({4, 6}).t()},  // non-contiguous: written contiguous
  };
  in.metadata = {{"format_version", "1"}, {"note", "x\"y"}};
  SafetensorsContents out;
  ASSERT_EQ(DecodeSafetensors(EncodeSafetensors(in), &out), std::nullopt);
  ASSERT_EQ(out.tensors.size(), in.tensors.size());
  for (size_t i = 0; i < in.tensors.size(); ++i) {
    // Data-section order is the write order.
    EXPECT_EQ(out.tensors[i].name, in.tensors[i].name);
    EXPECT_EQ(out.tensors[i].tensor.scalar_type(), in.tensors[i].tensor.scalar_type());
    EXPECT_EQ(out.tensors[i].tensor.sizes(), in.tensors[i].tensor.sizes());
    EXPECT_TRUE(at::equal(out.tensors[i].tensor, in.tensors[i].tensor)) << in.tensors[i].name;
  }
  EXPECT_EQ(out.metadata, in.metadata);
}

TEST_F(SafetensorsTest, LayoutFollowsTheFormat) {
  SafetensorsContents in;
  in.tensors = {{"x", at::tensor({1.0f, -2.0f})}, {"y", at::tensor({3.0f})}};
  in.metadata = {{"k", "v"}};
  const std::string bytes = EncodeSafetensors(in);
  const uint64_t n = HeaderSize(bytes);
  EXPECT_EQ(n % 8, 0u) << "header padded to 8 bytes";
  ASSERT_EQ(bytes.size(), 8 + n + 12);
  const auto header = nlohmann::json::parse(bytes.substr(8, n));
  EXPECT_EQ(header["x"]["dtype"], "F32");
  EXPECT_EQ(header["x"]["shape"], nlohmann::json({2}));
  EXPECT_EQ(header["x"]["data_offsets"], nlohmann::json({0, 8}));
  EXPECT_EQ(header["y"]["data_offsets"], nlohmann::json({8, 12}));
  EXPECT_EQ(header["__metadata__"]["k"], "v");
  // Little-endian IEEE floats: -2.0f is 0xC0000000.
  const std::string x1 = bytes.substr(8 + n + 4, 4);
  EXPECT_EQ(x1, std::string("\x00\x00\x00\xc0", 4));
}

TEST_F(SafetensorsTest, WritesFilesAtomically) {
  const testutil::TempDir dir;
  const std::string path = dir.File("m.safetensors");
  SafetensorsContents in;
  in.tensors = {{"w", at::randn({4, 4})}};
  WriteSafetensors(path, in);
  SafetensorsContents out;
  ASSERT_EQ(ReadSafetensors(path, &out), std::nullopt);
  EXPECT_TRUE(at::equal(out.tensors.at(0).tensor, in.tensors[0].tensor));
  EXPECT_NE(::access((path + ".tmp").c_str(), F_OK), 0) << "no temporary left behind";
  auto missing = ReadSafetensors(dir.File("none.safetensors"), &out);
  ASSERT_TRUE(missing.has_value());
  EXPECT_NE(missing->find("none.safetensors"), std::string::npos) << *missing;
}

TEST_F(SafetensorsTest, RefusesBadInput) {
  SafetensorsContents dup;
  dup.tensors = {{"a", at::zeros({1})}, {"a", at::zeros({1})}};
  EXPECT_THROW(EncodeSafetensors(dup), std::invalid_argument);
  SafetensorsContents complex;
  complex.tensors = {{"c", at::zeros({1}, at::kComplexFloat)}};
  EXPECT_THROW(EncodeSafetensors(complex), std::invalid_argument);

  SafetensorsContents in;
  in.tensors = {{"x", at::tensor({1.0f, 2.0f})}};
  const std::string good = EncodeSafetensors(in);
  SafetensorsContents out;
  EXPECT_TRUE(DecodeSafetensors(good.substr(0, 5), &out).has_value());
  EXPECT_TRUE(DecodeSafetensors(good.substr(0, good.size() - 1), &out).has_value()) << "cut data";
  EXPECT_TRUE(DecodeSafetensors(good + "xxxx", &out).has_value()) << "trailing bytes";
  auto with_header = [](const std::string& header, const std::string& data) {
    std::string bytes;
    for (int i = 0; i < 8; ++i)
      bytes.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xFF));
    return bytes + header + data;
  };
  const std::string eight(8, '\0');
  EXPECT_TRUE(DecodeSafetensors(with_header("[1]", eight), &out).has_value());
  EXPECT_TRUE(
      DecodeSafetensors(
          with_header(R"({"x":{"dtype":"F99","shape":[2],"data_offsets":[0,8]}})", eight), &out)
          .has_value());
  EXPECT_TRUE(
      DecodeSafetensors(
          with_header(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight), &out)
          .has_value())
      << "shape does not match the byte span";
  EXPECT_TRUE(
      DecodeSafetensors(with_header(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                    R"("y":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                                    eight),
                        &out)
          .has_value())
      << "overlap";
  EXPECT_EQ(
      DecodeSafetensors(
          with_header(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", eight), &out),
      std::nullopt);
}

TEST_F(SafetensorsTest, ExportHoldsEveryParameterUnderItsModuleName) {
  CellConfig c;
  ASSERT_EQ(ParseCellConfig({{"model",
                              {{"layers", 4},
                               {"d_model", 32},
                               {"heads", 4},
                               {"kv_heads", 2},
                               {"seq_len", 16},
                               {"arch", "SLDF"},
                               {"window", 4}}},
                             {"eval", {{"niah_samples", 0}}}},
                            &c),
            std::nullopt);
  Transformer model(c.model);
  const SafetensorsContents out = ExportContents(model, c, at::kBFloat16, "/x/ckpt-1.pt");
  std::map<std::string, at::Tensor> by_name;
  for (const auto& t : out.tensors) by_name[t.name] = t.tensor;
  EXPECT_EQ(by_name.size(), model->named_parameters().size());
  EXPECT_EQ(by_name.at("wte.weight").sizes(), (std::vector<int64_t>{264, 32}));
  EXPECT_EQ(by_name.at("wte.weight").scalar_type(), at::kBFloat16);
  EXPECT_EQ(by_name.count("lm_head.weight"), 0u) << "tied";
  EXPECT_EQ(by_name.at("h0.mixer.qkv.weight").sizes(), (std::vector<int64_t>{(4 + 2 * 2) * 8, 32}));
  EXPECT_EQ(by_name.at("h0.mixer.qk_norm_weight").sizes(), (std::vector<int64_t>{2, 1, 8}));
  EXPECT_EQ(by_name.at("h1.mixer.in_proj.weight").sizes(), (std::vector<int64_t>{4 * 32 + 4, 32}));
  EXPECT_EQ(by_name.at("h2.mixer.in_proj.weight").sizes(), (std::vector<int64_t>{4 * 32 + 8, 32}));
  EXPECT_EQ(by_name.at("h2.mixer.a_log").sizes(), (std::vector<int64_t>{4}));
  EXPECT_EQ(by_name.at("h3.mlp.gate_up.weight").sizes(),
            (std::vector<int64_t>{2 * c.model.resolved_mlp_hidden(), 32}));
  EXPECT_EQ(out.metadata.at("format_version"), std::to_string(kExportFormatVersion));
  EXPECT_EQ(out.metadata.at("config"), c.CanonicalText());
  EXPECT_EQ(out.metadata.at("cell_id"), base::CellIdOf(c.CanonicalText()));
  EXPECT_EQ(out.metadata.at("checkpoint"), "ckpt-1.pt");
}

// The same id as the coordinator gives the same config (tests/coordinator/grid_test.cc).
TEST_F(SafetensorsTest, AnExportNamesThePinnedCellByThePinnedId) {
  CellConfig c;
  ASSERT_EQ(ParseCellConfig(nlohmann::json::parse(testutil::kPinnedCellConfig), &c), std::nullopt);
  Transformer model(c.model);
  const SafetensorsContents out = ExportContents(model, c, at::kFloat, "/x/ckpt-1.pt");
  EXPECT_EQ(out.metadata.at("cell_id"), testutil::kPinnedCellId);
}

}  // namespace
}  // namespace onset::model
