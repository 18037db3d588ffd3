// The short convolution against its tap-by-tap reference, a kernel with a known answer (the
// previous token), its decoding state, and the mixers that carry it.
#include "model/nn/short_conv.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/utils.h>

#include "model/nn/linear_mixers.h"
#include "model/nn/transformer.h"

namespace onset::model {
namespace {

TEST(ShortConvTest, EqualsTheTapByTapReference) {
  at::set_num_threads(1);
  for (int64_t K : {1, 2, 4, 7}) {
    for (int64_t T : {1, 3, 4, 10}) {
      torch::manual_seed(K * 100 + T);
      ShortConv conv(6, K);
      torch::NoGradGuard no_grad;
      conv->weight.normal_();
      at::Tensor x = at::randn({2, T, 6});
      EXPECT_TRUE(at::allclose(conv(x), ReferenceShortConv(x, conv->weight), 1e-5, 1e-6))
          << "K " << K << " T " << T;
    }
  }
}

// A kernel whose only non-zero tap is K - 2 reads the previous position: y_t = silu(x_{t-1}),
// and y_0 = silu(0) = 0. Tap K - 1 alone is the current position.
TEST(ShortConvTest, APreviousTokenKernelShiftsByOne) {
  torch::NoGradGuard no_grad;
  ShortConv conv(3, 4);
  conv->weight.zero_();
  conv->weight.select(1, 2).fill_(1.0);
  at::Tensor x = at::randn({2, 9, 3});
  at::Tensor y = conv(x);  // (B, T, C)
  EXPECT_TRUE(at::allclose(y.narrow(1, 1, 8), at::silu(x.narrow(1, 0, 8)), 1e-6, 1e-7));
  EXPECT_EQ(y.select(1, 0).abs().max().item<float>(), 0.0f);
  conv->weight.zero_();
  conv->weight.select(1, 3).fill_(1.0);
  EXPECT_TRUE(at::allclose(conv(x), at::silu(x), 1e-6, 1e-7));
}

// Prefill over a prompt (shorter and longer than the kernel), then steps: every step equals
// the row of the forward over the whole sequence.
TEST(ShortConvTest, PrefillThenStepsEqualTheForward) {
  torch::NoGradGuard no_grad;
  for (int64_t prompt : {1, 2, 6}) {
    torch::manual_seed(prompt);
    ShortConv conv(5, 4);
    conv->weight.normal_();
    at::Tensor x = at::randn({3, prompt + 5, 5});
    at::Tensor want = conv(x);  // (B, T, C)
    at::Tensor state;
    at::Tensor got = conv->Prefill(x.narrow(1, 0, prompt), &state);
    EXPECT_TRUE(at::allclose(got, want.narrow(1, 0, prompt), 1e-5, 1e-6));
    ASSERT_EQ(state.sizes(), (at::IntArrayRef{3, 3, 5}));
    for (int64_t t = prompt; t < prompt + 5; ++t) {
      at::Tensor step = conv->Step(x.narrow(1, t, 1), &state);  // (B, 1, C)
      EXPECT_TRUE(at::allclose(step, want.narrow(1, t, 1), 1e-5, 1e-6)) << prompt << " " << t;
    }
  }
}

ModelConfig Model(const nlohmann::json& extra) {
  nlohmann::json m = {{"layers", 4},   {"d_model", 32},  {"heads", 2},
                      {"seq_len", 32}, {"arch", "FSLD"}, {"window", 4}};
  m.update(extra);
  CellConfig c;
  auto e = ParseCellConfig({{"model", m}}, &c);
  EXPECT_FALSE(e) << e->ToString();
  return c.model;
}

// true puts the convolution on the L and D layers only, named "conv" with (3C, K) weights; a
// config without the key (or false) gives the mixers without it; letters choose layers.
TEST(ShortConvTest, TheConfigChoosesTheLayersThatHaveIt) {
  auto convs = [](const ModelConfig& config) {
    Transformer model(config);
    std::string with;
    for (const auto& p : model->named_parameters()) {
      if (p.key().find(".mixer.conv.weight") != std::string::npos) {
        with += config.pattern[p.key()[1] - '0'];
        EXPECT_EQ(p.value().size(1), config.short_conv_kernel) << p.key();
      }
    }
    return with;
  };
  EXPECT_EQ(convs(Model({{"short_conv", true}})), "LD");
  EXPECT_EQ(convs(Model({{"short_conv", false}})), "");
  EXPECT_EQ(convs(Model(nlohmann::json::object())), "");
  EXPECT_EQ(convs(Model({{"short_conv", "SF"}, {"short_conv_kernel", 2}})), "FS");
  Transformer model(Model({{"short_conv", true}}));
  EXPECT_EQ(model->named_parameters()["h3.mixer.conv.weight"].sizes(),
            (at::IntArrayRef{3 * 32, 4}));
}

TEST(ShortConvTest, ShortConvValuesAreCheckedAndCanonical) {
  CellConfig c;
  auto parse = [&c](const nlohmann::json& model) {
    return ParseCellConfig({{"model", model}}, &c);
  };
  auto e = parse({{"arch", "gdn"}, {"short_conv", "DDX"}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->path, "model.short_conv");
  ASSERT_TRUE(parse({{"arch", "gdn"}, {"short_conv", 3}}));
  ASSERT_TRUE(parse({{"arch", "gdn"}, {"short_conv_kernel", 0}}));
  // Letters of layers the model lacks are dropped; with none left neither key is written.
  ASSERT_FALSE(parse({{"arch", "full"}, {"short_conv", "FLD"}}));
  EXPECT_EQ(c.model.short_conv, "F");
  EXPECT_EQ(c.ToJson()["model"]["short_conv"], "F");
  ASSERT_FALSE(parse({{"arch", "full"}}));
  EXPECT_FALSE(c.ToJson()["model"].contains("short_conv"));
  EXPECT_FALSE(c.ToJson()["model"].contains("short_conv_kernel"));
  ASSERT_FALSE(parse({{"arch", "gdn"}}));
  EXPECT_FALSE(c.ToJson()["model"].contains("short_conv"));  // none: the mixers as stored before
  ASSERT_FALSE(parse({{"arch", "gdn"}, {"short_conv", "DL"}}));
  EXPECT_EQ(c.ToJson()["model"]["short_conv"], "D");
  EXPECT_EQ(c.ToJson()["model"]["short_conv_kernel"], 4);
  CellConfig again;
  ASSERT_FALSE(ParseCellConfig(c.ToJson(), &again));
  EXPECT_EQ(again.CanonicalText(), c.CanonicalText());
}

// A recurrent mixer's head mask zeroes that head's read-out: masking every head leaves the
// output projection nothing (a zero output); masking none changes nothing.
TEST(ShortConvTest, RecurrentHeadsCanBeMasked) {
  torch::NoGradGuard no_grad;
  for (const bool conv : {true, false}) {
    const ModelConfig config = Model({{"short_conv", conv}});
    for (int layer : {2, 3}) {
      std::shared_ptr<Mixer> mixer = MakeMixer(config, layer);
      at::Tensor x = at::randn({2, 9, 32});
      MixerContext ctx;
      at::Tensor base = mixer->Forward(x, ctx);
      mixer->SetHeadMask(at::ones({2}));
      EXPECT_TRUE(at::equal(mixer->Forward(x, ctx), base));
      mixer->SetHeadMask(at::zeros({2}));
      EXPECT_EQ(mixer->Forward(x, ctx).abs().max().item<float>(), 0.0f);
      at::Tensor one = at::ones({2});
      one[1] = 0.0;
      mixer->SetHeadMask(one);
      at::Tensor half = mixer->Forward(x, ctx);
      EXPECT_GT((half - base).abs().max().item<float>(), 1e-6);
      mixer->SetHeadMask(at::Tensor());
      EXPECT_TRUE(at::equal(mixer->Forward(x, ctx), base));
    }
  }
}

}  // namespace
}  // namespace onset::model
