// Copies of a trainer's parameters, compared bit for bit: the tests that check one run against
// another (data parallel against one process, a WSD branch against its budget's own run).
#pragma once

#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "model/training/trainer.h"

namespace onset::model::testing {

// Detached copies of the model's parameters, in order.
inline std::vector<at::Tensor> ParameterSnapshot(Trainer& trainer) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& p : trainer.model()->parameters()) out.push_back(p.detach().clone());
  return out;
}

inline void ExpectSameParameters(const std::vector<at::Tensor>& a,
                                 const std::vector<at::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(at::equal(a[i], b[i])) << "parameter " << i;
}

}  // namespace onset::model::testing
