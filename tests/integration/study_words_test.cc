// A study's own words through the real onsetd and onset: the description and tags of its file
// in `onset status` (the list, --tag, one study, --json), tags growing on resubmission, and a
// resubmission that would change the description refused. Skips when a binary is missing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/integration/harness.h"

namespace onset {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// Never trained here.
constexpr char kGrid[] = R"(model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 1K, micro_batch: 4}
eval: {every_tokens: 10K, heldout_seqs: 4, niah_lengths: [64], niah_samples: 2}
grid: {arch: [full], tokens: [20K], seeds: 1}
)";

class StudyWordsTest : public testing::OnsetdTest {
 protected:
  StudyWordsTest() : OnsetdTest("onset-words") {}

  std::string Write(const std::string& name, const std::string& head) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << head << kGrid;
    return path;
  }
};

TEST_F(StudyWordsTest, DescriptionAndTagsInStatusTagsGrowTheDescriptionStays) {
  std::string missing;
  if (!testing::HaveBinaries({"onsetd", "onset"}, &missing))
    GTEST_SKIP() << missing << " not built";
  daemon_ = testing::StartDaemon(launcher_, dir_);
  ASSERT_FALSE(daemon_.address.empty());
  const std::string words = Write(
      "words.yaml", "name: words\ndescription: does NoPE help the hybrids?\ntags: [gpu, nope]\n");
  const std::string plain = Write("plain.yaml", "name: plain\n");
  ASSERT_EQ(Onset({"submit", words}).code, 0);
  ASSERT_EQ(Onset({"submit", plain}).code, 0);

  const testing::Ran list = Onset({"status"});
  EXPECT_EQ(list.code, 0);
  EXPECT_THAT(list.out, HasSubstr("TAGS"));
  EXPECT_THAT(list.out, HasSubstr("words  gpu,nope"));
  const testing::Ran tagged = Onset({"status", "--tag", "nope"});
  EXPECT_EQ(tagged.code, 0);
  EXPECT_THAT(tagged.out, HasSubstr("words"));
  EXPECT_THAT(tagged.out, Not(HasSubstr("plain")));
  EXPECT_EQ(Onset({"status", "words", "--tag", "nope"}).code, 2);

  const testing::Ran one = Onset({"status", "words"});
  EXPECT_THAT(one.out, HasSubstr("description: does NoPE help the hybrids?\ntags: gpu, nope\n"));
  const nlohmann::json json = nlohmann::json::parse(Onset({"status", "--json"}).out);
  EXPECT_EQ(json["studies"][0]["description"], "does NoPE help the hybrids?");
  EXPECT_EQ(json["studies"][0]["tags"], nlohmann::json({"gpu", "nope"}));

  // A new tag joins; the file leaving out the description keeps it.
  ASSERT_EQ(Onset({"submit", Write("words2.yaml", "name: words\ntags: [ablation]\n")}).code, 0);
  const testing::Ran grown = Onset({"status", "words"});
  EXPECT_THAT(grown.out,
              HasSubstr("description: does NoPE help the hybrids?\ntags: ablation, gpu, nope\n"));

  // Another description: refused, nothing changed.
  const testing::Ran changed = Onset(
      {"submit", Write("words3.yaml", "name: words\ndescription: something else\ntags: [x]\n")});
  EXPECT_NE(changed.code, 0);
  EXPECT_THAT(changed.err, HasSubstr("a study's description does not change"));
  EXPECT_THAT(Onset({"status", "words"}).out, Not(HasSubstr("tags: ablation, gpu, nope, x")));
}

}  // namespace
}  // namespace onset
