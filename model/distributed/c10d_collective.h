// A Collective (collective.h) over a c10d process group: Gloo when the ranks train on the CPU,
// NCCL when they train on CUDA devices (one device per rank). Ranks meet through a c10d store:
// a FileStore (a file every rank can open: one machine, or a shared filesystem), a TCPStore
// (rank 0 serves on MASTER_ADDR:MASTER_PORT, the others connect), or any other store, e.g. a
// HashStore shared by ranks that are threads of one process (tests).
//
// The timeout bounds how long one rank waits for the others, in the rendezvous and in every
// collective; ranks wait for rank 0 while it evaluates and writes checkpoints, so it must be
// generous. A rank that dies makes the others' operations fail (an exception) rather than hang.
#pragma once

#include <chrono>
#include <string>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "model/distributed/collective.h"

namespace onset::model {

// Whether this build can run NCCL (LibTorch with CUDA and NCCL's header at build time).
bool HaveNccl();

// A FileStore at `path` (created by the first rank to open it) for `world_size` ranks.
c10::intrusive_ptr<c10d::Store> OpenFileStore(const std::string& path, int world_size,
                                              std::chrono::milliseconds timeout);
// A TCPStore at host:port; `serve` (rank 0) listens there, the others connect, retrying until
// `timeout`.
c10::intrusive_ptr<c10d::Store> OpenTcpStore(const std::string& host, int port, bool serve,
                                             int world_size, std::chrono::milliseconds timeout);

class C10dCollective final : public Collective {
 public:
  // Joins the group of `world_size` ranks that meet through `store`; returns once all have
  // joined. CPU `device`: Gloo over TCP, its sockets bound to `gloo_host` (an address or host
  // name of this machine) or, when empty, to the interface named by GLOO_SOCKET_IFNAME or else
  // the address of this machine's host name. CUDA `device` (with an index): NCCL on it. Throws
  // (c10::Error or std::runtime_error) when the group cannot be formed.
  C10dCollective(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size,
                 const at::Device& device, std::chrono::milliseconds timeout,
                 const std::string& gloo_host = "");
  ~C10dCollective() override;

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  void AllReduceSum(const at::Tensor& tensor) override;
  void Broadcast(const at::Tensor& tensor, int root) override;
  void Barrier() override;

 private:
  int rank_;
  int world_size_;
  at::Device device_;
  c10::intrusive_ptr<c10d::Backend> backend_;
};

}  // namespace onset::model
