// The health monitor: the status follows the probe, for the server and every service named,
// from the first moment, and stops following once stopped.
#include "coordinator/server/health_monitor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

namespace onset::coordinator {
namespace {

using std::chrono::milliseconds;

// Records what the monitor sets.
class FakeHealth : public grpc::HealthCheckServiceInterface {
 public:
  void SetServingStatus(const std::string& service, bool serving) override {
    std::lock_guard<std::mutex> lock(mu_);
    status_[service] = serving;
    ++sets_;
  }
  void SetServingStatus(bool serving) override { SetServingStatus("", serving); }
  std::map<std::string, bool> status() {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }
  int sets() {
    std::lock_guard<std::mutex> lock(mu_);
    return sets_;
  }

 private:
  std::mutex mu_;
  std::map<std::string, bool> status_;
  int sets_ = 0;
};

// Polls `done` until it holds or 10 s pass.
template <typename F>
bool Eventually(F done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(2));
  }
  return done();
}

TEST(HealthMonitorTest, TheFirstProbeSetsEveryServiceBeforeTheConstructorReturns) {
  FakeHealth health;
  HealthMonitor monitor([] { return absl::OkStatus(); }, &health, {"a.A", "b.B"},
                        std::chrono::hours(1));
  EXPECT_TRUE(monitor.serving());
  EXPECT_EQ(health.status(),
            (std::map<std::string, bool>{{"", true}, {"a.A", true}, {"b.B", true}}));
}

TEST(HealthMonitorTest, TheStatusFollowsTheProbeBothWays) {
  FakeHealth health;
  std::atomic<bool> writable{true};
  std::atomic<int> probes{0};
  HealthMonitor monitor(
      [&] {
        ++probes;
        return writable ? absl::OkStatus()
                        : absl::UnavailableError("database write failed: database is full");
      },
      &health, {"a.A"}, milliseconds(1));
  ASSERT_TRUE(monitor.serving());
  writable = false;
  EXPECT_TRUE(Eventually([&] { return !monitor.serving(); }));
  EXPECT_EQ(health.status(), (std::map<std::string, bool>{{"", false}, {"a.A", false}}));
  writable = true;
  EXPECT_TRUE(Eventually([&] { return monitor.serving(); }));
  EXPECT_EQ(health.status(), (std::map<std::string, bool>{{"", true}, {"a.A", true}}));
  // A status is set when it changes, not at every probe.
  const int sets = health.sets();
  const int seen = probes;
  EXPECT_TRUE(Eventually([&] { return probes > seen + 5; }));
  EXPECT_EQ(health.sets(), sets);
}

TEST(HealthMonitorTest, AFailingFirstProbeStartsNotServing) {
  FakeHealth health;
  HealthMonitor monitor([] { return absl::InternalError("read-only file"); }, &health, {},
                        std::chrono::hours(1));
  EXPECT_FALSE(monitor.serving());
  EXPECT_EQ(health.status(), (std::map<std::string, bool>{{"", false}}));
}

TEST(HealthMonitorTest, StoppedItProbesNoMore) {
  FakeHealth health;
  std::atomic<int> probes{0};
  HealthMonitor monitor(
      [&] {
        ++probes;
        return absl::OkStatus();
      },
      &health, {}, milliseconds(1));
  EXPECT_TRUE(Eventually([&] { return probes > 3; }));
  monitor.Stop();
  const int stopped_at = probes;
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(probes, stopped_at);
  monitor.Stop();  // idempotent
}

}  // namespace
}  // namespace onset::coordinator
