// Every committed conformance scenario against every engine built, and proof that the runner
// catches a wrong expectation (so a green run means something).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "conformance/engines.hpp"

namespace {

std::vector<std::string> scenario_files() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(MMO_SCENARIO_DIR)) {
    if (e.path().extension() == ".scn") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

class Conformance : public ::testing::TestWithParam<std::string> {};

TEST_P(Conformance, EveryScenarioPasses) {
  const auto files = scenario_files();
  ASSERT_GE(files.size(), 30u) << "the conformance suite has at least 30 scenarios";
  const auto make = mmo::conformance::engine_factory(GetParam());
  for (const auto& file : files) {
    const auto r = mmo::conformance::run_file(file, make);
    EXPECT_TRUE(r.passed()) << file << " (" << r.steps << " steps)";
    for (const auto& f : r.failures) ADD_FAILURE() << f;
  }
}

TEST_P(Conformance, AWrongExpectationFailsWithItsLine) {
  const auto make = mmo::conformance::engine_factory(GetParam());
  const auto r = mmo::conformance::run_file(MMO_SCENARIO_DIR "/../negative/wrong_expectation.scn", make);
  ASSERT_FALSE(r.passed());
  ASSERT_EQ(r.failures.size(), 3u) << "one failure per wrong line";
  EXPECT_NE(r.failures[0].find("wrong_expectation.scn:7:"), std::string::npos) << r.failures[0];
  EXPECT_NE(r.failures[1].find("wrong_expectation.scn:10:"), std::string::npos) << r.failures[1];
  EXPECT_NE(r.failures[2].find("wrong_expectation.scn:12:"), std::string::npos) << r.failures[2];
}

TEST_P(Conformance, AMalformedScenarioIsAnErrorNotAPass) {
  const auto make = mmo::conformance::engine_factory(GetParam());
  EXPECT_FALSE(mmo::conformance::run_text("join p1 x=1 y=1 -> ok\nfrobnicate p1\n", "bad", make).passed());
  EXPECT_FALSE(mmo::conformance::run_text("moves now=5\n p1 seq=1 t=1 x=1 y=1 -> ack\n", "unjoined", make).passed());
  EXPECT_FALSE(mmo::conformance::run_text("moves now=5\n", "no_end", make).passed());
  EXPECT_FALSE(mmo::conformance::run_text("# only a comment\n", "empty", make).passed()) << "a scenario that checks nothing fails";
}

INSTANTIATE_TEST_SUITE_P(Engines, Conformance, ::testing::ValuesIn(mmo::conformance::engine_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
