#include "common/access_role.h"

#include <gtest/gtest.h>

namespace onset::common {
namespace {

constexpr Role kRoles[] = {Role::kRead, Role::kWorker, Role::kSubmit, Role::kAdmin};

TEST(AccessRoleTest, NamesRoundTripAndNothingElseParses) {
  for (Role role : kRoles) EXPECT_EQ(ParseRole(RoleName(role)), role) << RoleName(role);
  EXPECT_EQ(RoleName(Role::kRead), "read");
  EXPECT_EQ(RoleName(Role::kWorker), "worker");
  EXPECT_EQ(RoleName(Role::kSubmit), "submit");
  EXPECT_EQ(RoleName(Role::kAdmin), "admin");
  for (const char* word : {"", "Read", "ADMIN", "reader", "admin ", "root", "write"}) {
    EXPECT_FALSE(ParseRole(word).has_value()) << word;
  }
}

// The whole table of who may do what: rows the role held, columns the role needed.
TEST(AccessRoleTest, ReadUnderSubmitUnderAdminAndWorkerApart) {
  const bool allows[4][4] = {
      //            read   worker submit admin   (needed)
      /* read   */ {true, false, false, false},
      /* worker */ {false, true, false, false},
      /* submit */ {true, false, true, false},
      /* admin  */ {true, true, true, true},
  };
  for (int held = 0; held < 4; ++held) {
    for (int needed = 0; needed < 4; ++needed) {
      EXPECT_EQ(RoleAllows(kRoles[held], kRoles[needed]), allows[held][needed])
          << RoleName(kRoles[held]) << " for " << RoleName(kRoles[needed]);
    }
  }
}

}  // namespace
}  // namespace onset::common
