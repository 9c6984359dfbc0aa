#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "core/error.h"
#include "report/svg.h"
#include "report/train_report.h"

namespace fs = std::filesystem;
using json = nlohmann::json;
using cudal1::SvgPoint;
using cudal1::SvgSeries;
using cudal1::TrainLog;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A fresh folder per test, removed at the end.
class Scratch {
 public:
  Scratch() {
    const auto* t = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("cudal1_train_report_" + std::to_string(::getpid()) + "_" + t->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~Scratch() { fs::remove_all(dir_); }
  const fs::path& write_log(const std::string& text) const {
    std::ofstream(dir_ / "train_log.jsonl", std::ios::binary) << text;
    return dir_;
  }

 private:
  fs::path dir_;
};

std::size_t count(const std::string& hay, const std::string& needle) {
  std::size_t n = 0;
  for (auto p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

// The text from `from` up to the next `to` after it; empty when `from` is not there.
std::string between(const std::string& hay, const std::string& from, const std::string& to) {
  auto a = hay.find(from);
  if (a == std::string::npos) return "";
  auto b = hay.find(to, a + from.size());
  return hay.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

// The d attribute of the first path of `cls` ("line series0", "band series0").
std::string path_data(const std::string& svg, const std::string& cls) {
  std::string head = "<path class=\"" + cls + "\" d=\"";
  auto a = svg.find(head);
  if (a == std::string::npos) return "";
  a += head.size();
  return svg.substr(a, svg.find('"', a) - a);
}

// sft: loss 2.5 -> 1.25. selfsup: correct rate 25% -> 50% (mean 37.5%), raw reward 0.5 -> 1.5
// (mean 1). crl: correct rate 50% -> 75%, KL 0.01 and 0.03 (mean 0.02), clip fraction 10% and
// 30% (mean 20%).
std::vector<TrainLog> three_stages() {
  TrainLog sft{"sft", "runs/sft", {}};
  sft.steps = {{{"step", 1}, {"loss", 2.5}, {"lr", 1e-4}, {"grad_norm", 3.0}, {"seconds", 10.0}},
               {{"step", 2}, {"loss", 1.75}, {"lr", 1e-4}, {"grad_norm", 2.0}, {"seconds", 20.0}},
               {{"step", 3}, {"loss", 1.25}, {"lr", 1e-4}, {"grad_norm", 1.0}, {"seconds", 30.5}}};
  auto rl = [](const char* stage, int step, double loss, double rate, double raw) {
    return json{{"stage", stage}, {"step", step}, {"round", step}, {"loss", loss}, {"samples", 8},
                {"correct", int(rate * 8)}, {"correct_rate", rate}, {"raw_reward_mean", raw},
                {"raw_reward_std", 0.5}, {"reward_mean", raw - 1}, {"reward_std", 1.0}};
  };
  TrainLog selfsup{"selfsup", "runs/selfsup", {rl("selfsup", 1, 0.5, 0.25, 0.5), rl("selfsup", 2, 0.25, 0.5, 1.5)}};
  TrainLog crl{"crl", "runs/crl", {rl("crl", 1, 0.125, 0.5, 1.25), rl("crl", 2, 0.0625, 0.75, 2.25)}};
  crl.steps[0].update({{"kl", 0.01}, {"clip_fraction", 0.1}});
  crl.steps[1].update({{"kl", 0.03}, {"clip_fraction", 0.3}});
  return {sft, selfsup, crl};
}

// The summary table's row of a stage (its cells from "<td>stage</td>" to the end of the row).
std::string summary_row(const std::string& page, const std::string& stage) {
  return between(between(page, "<section id=\"stages\">", "</section>"), "<tr><td>" + stage + "</td>", "</tr>");
}

}  // namespace

TEST(TrainLog, ReadsStepsAndTheStageName) {
  Scratch s;
  TrainLog log = cudal1::load_train_log(s.write_log(
      "{\"stage\":\"selfsup\",\"step\":1,\"loss\":0.5}\n\n{\"stage\":\"selfsup\",\"step\":2,\"loss\":0.25}\n"));
  EXPECT_EQ(log.stage, "selfsup");
  ASSERT_EQ(log.steps.size(), 2u);
  EXPECT_EQ(log.steps[1]["step"], 2);
  EXPECT_FALSE(log.cut_short);
}

TEST(TrainLog, LinesWithoutAStageAreStageOne) {
  Scratch s;
  EXPECT_EQ(cudal1::load_train_log(s.write_log("{\"step\":1,\"loss\":7.1}\n")).stage, "sft");
}

TEST(TrainLog, ALastLineCutMidWriteIsSkipped) {
  Scratch s;
  TrainLog log = cudal1::load_train_log(s.write_log("{\"step\":1,\"loss\":2}\n{\"step\":2,\"loss\":1}\n{\"step\":3,\"lo"));
  EXPECT_EQ(log.steps.size(), 2u);
  EXPECT_TRUE(log.cut_short);
  EXPECT_NE(cudal1::train_report_html({log}).find("cut short"), std::string::npos);
}

TEST(TrainLog, ABrokenLineBeforeTheLastIsAnErrorNamingIt) {
  Scratch s;
  const fs::path& dir = s.write_log("{\"step\":1,\"loss\":2}\n{\"step\":2,\"lo\n{\"step\":3,\"loss\":1}\n");
  try {
    cudal1::load_train_log(dir);
    FAIL() << "a damaged middle line must not be skipped";
  } catch (const cudal1::Error& e) {
    EXPECT_EQ(e.kind(), cudal1::ErrorKind::input);
    EXPECT_NE(e.message().find((dir / "train_log.jsonl").string()), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("line 2"), std::string::npos) << e.message();
    EXPECT_FALSE(e.hint().empty());
  }
}

TEST(TrainLog, ALineThatIsNotAnObjectIsAnError) {
  Scratch s;
  EXPECT_THROW(cudal1::load_train_log(s.write_log("[1, 2]\n{\"step\":1}\n")), cudal1::Error);
}

TEST(TrainLog, AMissingLogIsAnInputError) {
  Scratch s;
  try {
    cudal1::load_train_log(s.write_log("{}") / "no-such-stage");
    FAIL();
  } catch (const cudal1::Error& e) {
    EXPECT_EQ(e.kind(), cudal1::ErrorKind::input);
    EXPECT_NE(e.message().find("train_log.jsonl"), std::string::npos);
  }
}

TEST(TrainReport, SummaryTableHoldsEachStagesFigures) {
  std::string page = cudal1::train_report_html(three_stages());
  std::string sft = summary_row(page, "sft"), selfsup = summary_row(page, "selfsup"), crl = summary_row(page, "crl");
  ASSERT_FALSE(sft.empty());
  ASSERT_FALSE(selfsup.empty());
  ASSERT_FALSE(crl.empty());
  // steps, time, first and last loss; the sampling columns empty
  EXPECT_NE(sft.find("<td>runs/sft</td><td class=\"num\">3</td><td class=\"num\">30.5 s</td>"
                     "<td class=\"num\">2.5</td><td class=\"num\">1.25</td><td class=\"na\">-</td>"),
            std::string::npos) << sft;
  // correct rate first, last, mean; raw reward first, last, mean; no KL or clip fraction
  EXPECT_NE(selfsup.find("<td class=\"num\">0.5</td><td class=\"num\">0.25</td><td class=\"num\">25.0%</td>"
                         "<td class=\"num\">50.0%</td><td class=\"num\">37.5%</td><td class=\"num\">0.5</td>"
                         "<td class=\"num\">1.5</td><td class=\"num\">1</td><td class=\"na\">-</td><td class=\"na\">-</td>"),
            std::string::npos) << selfsup;
  EXPECT_NE(crl.find("<td class=\"num\">62.5%</td><td class=\"num\">1.25</td><td class=\"num\">2.25</td>"
                     "<td class=\"num\">1.75</td><td class=\"num\">0.02</td><td class=\"num\">20.0%</td>"),
            std::string::npos) << crl;
  // stages in the order given
  EXPECT_LT(page.find("<tr><td>sft</td>"), page.find("<tr><td>selfsup</td>"));
  EXPECT_LT(page.find("<tr><td>selfsup</td>"), page.find("<tr><td>crl</td>"));
}

TEST(TrainReport, ACurveForEachMetricAStageLogs) {
  std::string page = cudal1::train_report_html(three_stages());
  std::string sft = between(page, "<section id=\"stage-1\">", "</section>");
  std::string selfsup = between(page, "<section id=\"stage-2\">", "</section>");
  std::string crl = between(page, "<section id=\"stage-3\">", "</section>");
  auto plot = [](const std::string& title) { return "aria-label=\"" + title + "\""; };
  EXPECT_EQ(count(sft, "<svg"), 3u);  // loss, gradient norm, learning rate
  EXPECT_EQ(count(sft, plot("loss")), 1u);
  EXPECT_EQ(count(sft, plot("correct rate")), 0u);
  EXPECT_EQ(count(selfsup, "<svg"), 4u);  // loss, raw reward, reward, correct rate
  EXPECT_EQ(count(selfsup, plot("KL to the reference policy (k3)")), 0u);
  EXPECT_EQ(count(crl, "<svg"), 6u);  // and KL, clip fraction
  EXPECT_EQ(count(crl, plot("KL to the reference policy (k3)")), 1u);
  EXPECT_EQ(count(crl, plot("clip fraction")), 1u);
  // the reward curves carry their std band
  EXPECT_NE(between(crl, plot("raw reward, mean \xC2\xB1 std"), "</svg>").find("<path class=\"band series2\""), std::string::npos);
  EXPECT_NE(between(crl, plot("reward after normalisation, mean \xC2\xB1 std"), "</svg>").find("class=\"band"),
            std::string::npos);
}

TEST(TrainReport, SamplingStagesEndToEndOnOneAxis) {
  auto stages = three_stages();
  std::string across = between(cudal1::train_report_html(stages), "<section id=\"across\">", "</section>");
  ASSERT_FALSE(across.empty());
  std::string rate = between(across, "aria-label=\"correct rate by stage\"", "</svg>");
  // selfsup's steps 1-2, then crl's as 3-4, in the stages' own colours (sft, without samples, is left out)
  EXPECT_NE(rate.find("<title>selfsup, step, stages end to end 2: 50.00%</title>"), std::string::npos) << rate;
  EXPECT_NE(rate.find("<title>crl, step, stages end to end 4: 75.00%</title>"), std::string::npos) << rate;
  EXPECT_NE(rate.find("line series1"), std::string::npos);
  EXPECT_NE(rate.find("line series2"), std::string::npos);
  EXPECT_EQ(rate.find("line series0"), std::string::npos);
  EXPECT_NE(across.find("aria-label=\"raw reward, mean \xC2\xB1 std by stage\""), std::string::npos);

  stages.pop_back();  // one sampling stage: its own curves say it all
  EXPECT_EQ(cudal1::train_report_html(stages).find("id=\"across\""), std::string::npos);
}

TEST(TrainReport, EscapesStageNamesAndFolders) {
  TrainLog log{"<script>alert(1)</script>", "/tmp/<script>x</script>", {}};
  log.steps = {{{"stage", log.stage}, {"step", 1}, {"loss", 1.0}, {"correct_rate", 0.5}},
               {{"stage", log.stage}, {"step", 2}, {"loss", 0.5}, {"correct_rate", 0.75}}};
  std::string page = cudal1::train_report_html({log, log});
  EXPECT_EQ(page.find("<script>alert"), std::string::npos);
  EXPECT_EQ(page.find("<script>x"), std::string::npos);
  EXPECT_NE(page.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(page.find("/tmp/&lt;script&gt;x"), std::string::npos);
}

TEST(TrainReport, AStageWithoutStepsSaysSo) {
  std::string page = cudal1::train_report_html({TrainLog{"crl", "runs/crl", {}}});
  EXPECT_NE(page.find("No steps logged yet."), std::string::npos);
  EXPECT_EQ(page.find("<svg"), std::string::npos);
}

TEST(SvgLines, DrawsABandAndLeavesGapsAtMissingValues) {
  SvgSeries s{"reward", "series0", {{1, 1.0, 0.5}, {2, 2.0, 0.5}, {3, kNaN, 0.5}, {4, 1.5, 0.5}, {5, 1.0, 0.5}}};
  std::string svg = cudal1::svg_lines({s}, {"step", "", {}, false}, "reward");
  std::string line = path_data(svg, "line series0"), band = path_data(svg, "band series0");
  EXPECT_EQ(count(line, "M"), 2u) << line;  // 1-2, then 4-5
  EXPECT_EQ(count(line, "L"), 2u) << line;
  EXPECT_EQ(count(band, "Z"), 2u) << band;
  EXPECT_LT(svg.find("class=\"band"), svg.find("class=\"line"));  // bands under the lines

  for (auto& p : s.points) p.spread = kNaN;
  EXPECT_EQ(cudal1::svg_lines({s}, {}, "reward").find("class=\"band"), std::string::npos);
}

TEST(SvgLines, AOnePointSeriesAndALonePointStayVisible) {
  std::string one = cudal1::svg_lines({{"crl", "series2", {{7, 0.4, 0.1}}}}, {}, "one");
  EXPECT_EQ(count(one, "<circle class=\"pt series2\""), 1u);
  EXPECT_NE(path_data(one, "band series2"), "");
  // a point between two gaps is a dot; points on a drawn line have none past the detail limit
  std::vector<SvgPoint> pts;
  for (int i = 0; i < 100; ++i) pts.push_back({double(i), i == 49 || i == 51 ? kNaN : double(i)});
  std::string many = cudal1::svg_lines({{"loss", "series0", pts}}, {}, "many");
  EXPECT_EQ(count(many, "<circle"), 1u);
  EXPECT_NE(many.find("<title>loss, x 50: 50</title>"), std::string::npos);
}

TEST(SvgLines, NiceTicksAndPercentLabels) {
  std::string rate = cudal1::svg_lines({{"r", "series0", {{1, 0.13}, {2, 0.87}}}}, {"step", "", {0, 1}, true}, "rate");
  for (const char* t : {">0%<", ">25%<", ">50%<", ">75%<", ">100%<"}) EXPECT_NE(rate.find(t), std::string::npos) << t;
  std::string plain = cudal1::svg_lines({{"r", "series0", {{1, 0.13}, {2, 0.87}}}}, {}, "plain");
  for (const char* t : {">0.0<", ">0.2<", ">0.4<", ">1.0<"}) EXPECT_NE(plain.find(t), std::string::npos) << t;
  EXPECT_EQ(plain.find(">1.5<"), std::string::npos);  // steps are whole numbers
  EXPECT_EQ(plain.find(">0.25<"), std::string::npos);
}

TEST(SvgLines, EscapesTitleAndLabels) {
  std::string svg = cudal1::svg_lines({{"<b>a</b>", "series0", {{1, 1}}}, {"<i>b</i>", "series1", {{1, 2}}}},
                                      {"<x>", "<y>", {}, false}, "<script>t</script>");
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
  EXPECT_EQ(svg.find("<x>"), std::string::npos);
  EXPECT_NE(svg.find("&lt;i&gt;b&lt;/i&gt;"), std::string::npos);  // in the legend
}
