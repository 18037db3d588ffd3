#include "model/distributed/collective.h"

namespace onset::model {
namespace {

// Reduces tensors[begin, end) (same dtype and device) through one flat buffer.
void ReduceBucket(Collective& collective, const std::vector<at::Tensor>& tensors, size_t begin,
                  size_t end) {
  if (end - begin == 1 && tensors[begin].is_contiguous()) {
    collective.AllReduceSum(tensors[begin]);
    return;
  }
  std::vector<at::Tensor> flat;
  for (size_t i = begin; i < end; ++i) flat.push_back(tensors[i].reshape({-1}));
  at::Tensor bucket = at::cat(flat);  // (sum of numels,)
  collective.AllReduceSum(bucket);
  int64_t offset = 0;
  for (size_t i = begin; i < end; ++i) {
    const int64_t n = tensors[i].numel();
    tensors[i].copy_(bucket.narrow(0, offset, n).view(tensors[i].sizes()));
    offset += n;
  }
}

}  // namespace

void AllReduceSumFlat(Collective& collective, const std::vector<at::Tensor>& tensors,
                      int64_t bucket_bytes) {
  if (collective.world_size() == 1) return;
  size_t begin = 0;
  int64_t bytes = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    const int64_t size = t.numel() * static_cast<int64_t>(t.element_size());
    const bool fits = i > begin && t.scalar_type() == tensors[begin].scalar_type() &&
                      t.device() == tensors[begin].device() && bytes + size <= bucket_bytes;
    if (i > begin && !fits) {
      ReduceBucket(collective, tensors, begin, i);
      begin = i;
      bytes = 0;
    }
    bytes += size;
  }
  if (begin < tensors.size()) ReduceBucket(collective, tensors, begin, tensors.size());
}

}  // namespace onset::model
