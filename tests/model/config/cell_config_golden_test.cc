// The canonical text of a cell config is the input of its cell id: these tests pin it, byte for
// byte, for varied configs and for every cell the studies in studies/ expand to
// (testdata/cell_config_golden.txt says how the cases were made), check that the canonical
// form reads back to itself, and pin the errors of configs the reader refuses.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "base/sha256.h"
#include "model/config/cell_config.h"

namespace onset::model {
namespace {

using nlohmann::json;

struct GoldenCase {
  std::string name;
  int line = 0;
  json input;
  std::string canonical;  // empty: only the id is pinned
  std::string id;
};

std::vector<GoldenCase> ReadGolden() {
  const std::string path =
      std::string(ONSET_SOURCE_DIR) + "/tests/model/config/testdata/cell_config_golden.txt";
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::vector<GoldenCase> cases;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.find(' ');
    const std::string tag = line.substr(0, space);
    const std::string rest = space == std::string::npos ? "" : line.substr(space + 1);
    if (tag == "case") {
      cases.push_back({rest, n, json(), "", ""});
      continue;
    }
    if (cases.empty()) {
      ADD_FAILURE() << path << ":" << n << ": " << tag << " before the first case";
      continue;
    }
    if (tag == "in") {
      cases.back().input = json::parse(rest);
    } else if (tag == "out") {
      cases.back().canonical = rest;
    } else if (tag == "id") {
      cases.back().id = rest;
    } else {
      ADD_FAILURE() << path << ":" << n << ": unknown tag '" << tag << "'";
    }
  }
  return cases;
}

std::string Where(const GoldenCase& c) {
  return "cell_config_golden.txt:" + std::to_string(c.line) + " (" + c.name + ")";
}

TEST(CellConfigGoldenTest, CanonicalTextAndCellIdsAreUnchanged) {
  const std::vector<GoldenCase> cases = ReadGolden();
  ASSERT_GT(cases.size(), 100u);
  for (const GoldenCase& g : cases) {
    CellConfig c;
    std::optional<FieldError> e = ParseCellConfig(g.input, &c);
    ASSERT_FALSE(e) << Where(g) << ": " << e->ToString();
    const std::string text = c.CanonicalText();
    if (!g.canonical.empty()) {
      EXPECT_EQ(text, g.canonical) << Where(g);
    }
    EXPECT_EQ(base::Sha256Hex(text).substr(0, 16), g.id) << Where(g) << ": " << text;
  }
}

TEST(CellConfigGoldenTest, CanonicalFormReadsBackToItself) {
  for (const GoldenCase& g : ReadGolden()) {
    CellConfig c;
    ASSERT_FALSE(ParseCellConfig(g.input, &c)) << Where(g);
    const json canonical = c.ToJson();
    EXPECT_EQ(c.ToJson(), canonical) << Where(g);  // ToJson is a function of the config
    // What onset-train reads (the canonical text) is the same cell...
    CellConfig reread;
    std::optional<FieldError> e = ParseCellConfig(canonical, &reread);
    ASSERT_FALSE(e) << Where(g) << ": " << e->ToString();
    EXPECT_EQ(reread.ToJson(), canonical) << Where(g);
    EXPECT_EQ(reread.CanonicalText(), c.CanonicalText()) << Where(g);
    EXPECT_FALSE(ValidateCanonical(c.CanonicalText())) << Where(g);
    // ... and a config read from its canonical form is a fixed point, field for field.
    CellConfig again;
    ASSERT_FALSE(ParseCellConfig(reread.ToJson(), &again)) << Where(g);
    EXPECT_TRUE(again == reread) << Where(g) << ": " << again.ToJson().dump() << "\n"
                                 << reread.ToJson().dump();
  }
}

TEST(CellConfigGoldenTest, ErrorsAreUnchanged) {
  const std::string path =
      std::string(ONSET_SOURCE_DIR) + "/tests/model/config/testdata/cell_config_errors.txt";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot read " << path;
  std::string line;
  int checked = 0;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    const json row = json::parse(line);
    CellConfig c;
    std::optional<FieldError> e = ParseCellConfig(row.at(0), &c);
    EXPECT_EQ(e ? e->ToString() : "no error", row.at(1).get<std::string>())
        << "cell_config_errors.txt:" << n << ": " << row.at(0).dump();
    ++checked;
  }
  EXPECT_GT(checked, 90);
}

}  // namespace
}  // namespace onset::model
