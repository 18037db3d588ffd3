#include "model/training/data_parallel.h"

namespace onset::model {

DataParallel::DataParallel(Collective* collective, const at::Device& device)
    : collective_(collective != nullptr ? collective : &single_process_), device_(device) {}

DataParallel::Share DataParallel::ShareOf(int64_t seqs, int rank, int world) {
  return {seqs * rank / world, seqs * (rank + 1) / world};
}

void DataParallel::BroadcastModel(const torch::nn::Module& model) {
  if (!distributed()) return;
  at::NoGradGuard no_grad;
  for (const at::Tensor& t : model.parameters()) collective_->Broadcast(t, 0);
  for (const at::Tensor& t : model.buffers()) collective_->Broadcast(t, 0);
}

void DataParallel::SumGradients(const std::vector<at::Tensor>& params, const at::Tensor& loss_sum) {
  if (!distributed()) return;
  std::vector<float> flags(params.size(), 0.0f);
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].grad().defined()) {
      flags[i] = 1.0f;
    } else {
      params[i].mutable_grad() = at::zeros_like(params[i]);
    }
  }
  at::Tensor reached = at::tensor(flags).to(device_);  // (P,) float
  std::vector<at::Tensor> tensors;
  for (const at::Tensor& p : params) tensors.push_back(p.grad());
  tensors.push_back(loss_sum);
  tensors.push_back(reached);
  AllReduceSumFlat(*collective_, tensors);
  at::Tensor ranks_reached = reached.cpu();  // (P,) float: how many ranks reached each
  const float* count = ranks_reached.data_ptr<float>();
  for (size_t i = 0; i < params.size(); ++i) {
    if (count[i] == 0) params[i].mutable_grad() = at::Tensor();
  }
}

bool DataParallel::AnyRank(bool flag) {
  if (!distributed()) return flag;
  at::Tensor count = at::full({1}, flag ? 1.0f : 0.0f,
                              at::TensorOptions().dtype(at::kFloat).device(device_));  // (1,)
  collective_->AllReduceSum(count);  // (1,): ranks where it holds
  return count.item<float>() > 0;
}

std::vector<int64_t> DataParallel::FromLead(const std::vector<int64_t>& values) {
  if (!distributed()) return values;
  at::Tensor message = at::tensor(values).to(device_);  // (n,) int64
  collective_->Broadcast(message, 0);
  message = message.cpu();
  const int64_t* v = message.data_ptr<int64_t>();
  return std::vector<int64_t>(v, v + message.numel());
}

void DataParallel::Barrier() {
  if (distributed()) collective_->Barrier();
}

}  // namespace onset::model
