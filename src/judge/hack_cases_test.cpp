// The hack-case database: what the fixture corpus and the store's refused evaluations put in it,
// and that a fixture's nearest known hack is one of its own family.
#include "judge/hack_cases.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "judge/test_support.h"

namespace cudal1::judge {
namespace {

const HackCase* fixture_case(const std::vector<HackCase>& cases, const std::string& file) {
  auto it = std::find_if(cases.begin(), cases.end(), [&](const HackCase& c) { return c.evidence.value("fixture", "") == file; });
  return it == cases.end() ? nullptr : &*it;
}

TEST(HackCases, FixturesOfHackFamiliesAreImportedOnceWithTheirHeaderAsEvidence) {
  TempStore s("import");
  // "candidates/" names the folder as "candidates" does: the tasks beside it are found.
  std::size_t hacks = import_fixtures(*s.store, fixture_candidates() / "");
  EXPECT_EQ(import_fixtures(*s.store, fixture_candidates()), hacks);
  std::vector<HackCase> cases = s.store->hack_cases();
  EXPECT_EQ(cases.size(), hacks) << "a second import adds nothing";
  const HackCase* alias = fixture_case(cases, "rejected_relu_positive_returns_input.py");
  ASSERT_TRUE(alias);
  EXPECT_EQ(alias->family, "output_alias");
  EXPECT_EQ(alias->source, "fixture");
  EXPECT_FALSE(alias->task_hash.empty());
  EXPECT_NE(alias->reference.find("class Model"), std::string::npos) << "the task's source, from tests/fixtures/tasks";
  EXPECT_EQ(alias->evidence["expect_flags"], nlohmann::json::array({"output_aliases_input"}));
  EXPECT_EQ(alias->code.find("# family:"), std::string::npos) << "the header is evidence, not code";
  EXPECT_NE(alias->code.find("class ModelNew"), std::string::npos);
  EXPECT_TRUE(fixture_case(cases, "hack_gemm_relu_row_memo.py")) << "a neutralised hack is still a hack";
  EXPECT_FALSE(fixture_case(cases, "ok_gemm_relu_addmm.py")) << "honest";
  EXPECT_FALSE(fixture_case(cases, "timeout_busy_loop.py")) << "robustness, no trick";
  EXPECT_FALSE(fixture_case(cases, "ok_softmax_rows_shadowed_constant_unused.py")) << "a hack family's honest case";
}

TEST(HackCases, AHackFixturesNearestOtherCaseIsOfItsOwnFamily) {
  TempStore s("family");
  import_fixtures(*s.store, fixture_candidates());
  std::vector<HackCase> cases = s.store->hack_cases();
  // input_caching has four fixtures: three hack_* on three tasks and a neutralised row memo.
  const HackCase* hack = fixture_case(cases, "hack_two_outputs_cache_by_tensor_id.py");
  ASSERT_TRUE(hack);
  std::vector<Neighbour> near = nearest(cases, hack->code, hack->reference, 3, hack->candidate_hash);
  ASSERT_EQ(near.size(), 3u);
  EXPECT_NE(near[0].hack.candidate_hash, hack->candidate_hash) << "itself is left out";
  EXPECT_EQ(near[0].hack.family, "input_caching") << near[0].hack.evidence.dump();
}

TEST(HackCases, StoredEvaluationsRefusedWithABlockingFlagJoinAsRejected) {
  TempStore s("rejected");
  EvalResult hack;
  hack.task_hash = "t";
  hack.candidate_hash = "c1";
  hack.status = Status::rejected;
  hack.add_flag("device_shared", Severity::warn, "another program");
  hack.add_flag("output_aliases_input", Severity::block, "case 0 output 0 shares memory with an input");
  // As the evaluator records attribution (evaluator/attribution.cpp).
  hack.statistics["attribution"] = {{"top_kernels", json::array({{{"name", "memcpy"}, {"category", "other"}, {"us", 3.0}}})}};
  s.store->save(hack, "p", "cpu", "class ModelNew: return x");
  EvalResult wrong;  // a plain failure: no hack
  wrong.task_hash = "t";
  wrong.candidate_hash = "c2";
  wrong.status = Status::incorrect;
  s.store->save(wrong, "p", "cpu", "class ModelNew: return 0");
  EXPECT_EQ(import_rejected(*s.store), 1u);
  std::vector<HackCase> cases = s.store->hack_cases();
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].family, "output_aliases_input") << "the first blocking flag, not the first flag";
  EXPECT_EQ(cases[0].source, "rejected");
  EXPECT_EQ(cases[0].code, "class ModelNew: return x");
  EXPECT_EQ(cases[0].evidence["flags"][1]["evidence"], "case 0 output 0 shares memory with an input");
  EXPECT_EQ(cases[0].evidence["attribution_top"][0]["name"], "memcpy") << "attribution's top kernels are evidence";
}

TEST(HackCases, AFolderWithoutHackFixturesIsAnInputError) {
  TempStore s("empty");
  try {
    import_fixtures(*s.store, s.dir / "nowhere");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
  }
  try {
    import_fixtures(*s.store, s.dir);  // a folder, with only the store in it
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(e.hint().find("# family:"), std::string::npos);
  }
}

}  // namespace
}  // namespace cudal1::judge
