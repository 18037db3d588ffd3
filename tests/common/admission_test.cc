#include "common/admission.h"

#include <gtest/gtest.h>

#include <thread>

namespace onset::common {
namespace {

using std::chrono::milliseconds;

TEST(AdmissionTest, AtMostItsPlacesAreTakenAndAFreedOneGoesToAWaiter) {
  Admission admission(2);
  std::optional<Admission::Ticket> a = admission.Enter(milliseconds(0));
  std::optional<Admission::Ticket> b = admission.Enter(milliseconds(0));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(admission.taken(), 2);
  // Full: a caller that cannot wait is turned away.
  EXPECT_FALSE(admission.Enter(milliseconds(0)).has_value());
  EXPECT_FALSE(admission.Enter(milliseconds(20)).has_value());
  // A place freed while one waits is its.
  std::optional<Admission::Ticket> c;
  std::thread waiter([&] { c = admission.Enter(milliseconds(60'000)); });
  a.reset();
  waiter.join();
  EXPECT_TRUE(c.has_value());
  EXPECT_EQ(admission.taken(), 2);
  b.reset();
  c.reset();
  EXPECT_EQ(admission.taken(), 0);
}

TEST(AdmissionTest, AMovedTicketLeavesOnce) {
  Admission admission(1);
  std::optional<Admission::Ticket> a = admission.Enter(milliseconds(0));
  ASSERT_TRUE(a.has_value());
  {
    Admission::Ticket moved = std::move(*a);
    a.reset();
    EXPECT_EQ(admission.taken(), 1);
  }
  EXPECT_EQ(admission.taken(), 0);
}

}  // namespace
}  // namespace onset::common
