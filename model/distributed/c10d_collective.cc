#include "model/distributed/c10d_collective.h"

#include <cstdlib>
#include <stdexcept>
#include <utility>
#include <vector>

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#if ONSET_WITH_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace onset::model {
namespace {

c10::intrusive_ptr<c10d::Backend> MakeGloo(c10::intrusive_ptr<c10d::Store> store, int rank,
                                           int world_size, std::chrono::milliseconds timeout,
                                           const std::string& host) {
#ifdef USE_C10D_GLOO  // defined by LibTorch's CMake config when it was built with Gloo
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
  if (!host.empty()) {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(host));
  } else if (ifname != nullptr && *ifname != '\0') {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
  } else {
    options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  return c10::make_intrusive<c10d::ProcessGroupGloo>(std::move(store), rank, world_size,
                                                     std::move(options));
#else
  (void)store, (void)rank, (void)world_size, (void)timeout, (void)host;
  throw std::runtime_error("this LibTorch has no Gloo, so it cannot train on several CPU ranks");
#endif
}

c10::intrusive_ptr<c10d::Backend> MakeNccl(c10::intrusive_ptr<c10d::Store> store, int rank,
                                           int world_size, const at::Device& device,
                                           std::chrono::milliseconds timeout) {
#if ONSET_WITH_NCCL
  c10::cuda::set_device(device.index());
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  auto backend = c10::make_intrusive<c10d::ProcessGroupNCCL>(std::move(store), rank, world_size,
                                                             std::move(options));
  // Forms the communicator now, so that a failed rendezvous shows here and not at step one.
  backend->setBoundDeviceId(device);
  backend->eagerConnectSingleDevice(device);
  return backend;
#else
  (void)store, (void)rank, (void)world_size, (void)device, (void)timeout;
  throw std::runtime_error(
      "this onset-train was built without NCCL, so it cannot train on several CUDA devices");
#endif
}

void Wait(const c10::intrusive_ptr<c10d::Work>& work) {
  if (!work->wait()) throw std::runtime_error("collective operation did not complete");
}

}  // namespace

bool HaveNccl() { return ONSET_WITH_NCCL != 0; }

c10::intrusive_ptr<c10d::Store> OpenFileStore(const std::string& path, int world_size,
                                              std::chrono::milliseconds timeout) {
  auto store = c10::make_intrusive<c10d::FileStore>(path, world_size);
  store->setTimeout(timeout);
  return store;
}

c10::intrusive_ptr<c10d::Store> OpenTcpStore(const std::string& host, int port, bool serve,
                                             int world_size, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(port);
  options.isServer = serve;
  options.numWorkers = world_size;
  options.waitWorkers = true;
  options.timeout = timeout;
  return c10::make_intrusive<c10d::TCPStore>(host, options);
}

C10dCollective::C10dCollective(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size,
                               const at::Device& device, std::chrono::milliseconds timeout,
                               const std::string& gloo_host)
    : rank_(rank), world_size_(world_size), device_(device) {
  if (device.is_cuda()) {
    if (!device.has_index()) throw std::invalid_argument("NCCL needs a CUDA device index");
    backend_ = MakeNccl(std::move(store), rank, world_size, device, timeout);
  } else {
    backend_ = MakeGloo(std::move(store), rank, world_size, timeout, gloo_host);
  }
}

C10dCollective::~C10dCollective() {
  // NCCL wants its communicators torn down explicitly; Gloo's destructor suffices.
  if (device_.is_cuda() && backend_) backend_->shutdown();
}

void C10dCollective::AllReduceSum(const at::Tensor& tensor) {
  std::vector<at::Tensor> tensors{tensor};
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp::SUM;
  Wait(backend_->allreduce(tensors, options));
}

void C10dCollective::Broadcast(const at::Tensor& tensor, int root) {
  std::vector<at::Tensor> tensors{tensor};
  c10d::BroadcastOptions options;
  options.rootRank = root;
  Wait(backend_->broadcast(tensors, options));
}

void C10dCollective::Barrier() {
  // A one-element reduction read back on the host: the same on both backends (NCCL's own
  // barrier guesses a device), and it returns only once every rank has reached it.
  at::Tensor token = at::ones({1}, at::TensorOptions().dtype(at::kFloat).device(device_));  // (1,)
  AllReduceSum(token);
  (void)token.item<float>();
}

}  // namespace onset::model
