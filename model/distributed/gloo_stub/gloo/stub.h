// Declarations of the few Gloo types that torch's ProcessGroupGloo.hpp names, for LibTorch
// builds (the torch wheel among them) that ship libtorch_cpu.so with Gloo inside but not Gloo's
// headers. ProcessGroupGloo holds Gloo objects only through pointers, and onset calls nothing
// of Gloo's own: it constructs ProcessGroupGloo and calls its exported methods, all compiled
// into LibTorch. So these declarations only have to let the header parse; nothing here is
// defined, instantiated or called. model/CMakeLists.txt uses this directory only when LibTorch's
// include directories have no gloo/ of their own.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace gloo {

class Context {
 public:
  void setTimeout(std::chrono::milliseconds timeout);  // named by an inline torch method
};

namespace transport {
class Device;
class UnboundBuffer;
}  // namespace transport

namespace rendezvous {

// The interface ProcessGroupGloo::GlooStore overrides.
class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const std::vector<char>& data) = 0;
  virtual std::vector<char> get(const std::string& key) = 0;
  virtual void wait(const std::vector<std::string>& keys) = 0;
  virtual void wait(const std::vector<std::string>& keys,
                    const std::chrono::milliseconds& timeout) = 0;
};

}  // namespace rendezvous
}  // namespace gloo
