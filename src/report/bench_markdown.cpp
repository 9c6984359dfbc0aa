// The bench report's Markdown summary: what a pull request or a notes file quotes.
#include "report/bench_report.h"
#include "report/html.h"

namespace cudal1 {

using json = nlohmann::json;

namespace {

std::string md(const std::string& s, std::size_t max_bytes = 200) {
  return escape_markdown(truncate_utf8(s, max_bytes));
}

std::string stat(const std::optional<double>& v) { return v ? format_speedup(*v) : "-"; }

}  // namespace

std::string bench_markdown(const json& bench) {
  BenchStats s = bench_stats(bench);
  std::string out = "# " + md(bench_text(bench, "title", "cudal1 bench"), 300) + "\n\n";

  std::vector<std::string> parts;
  if (auto v = bench_text(bench, "suite"); !v.empty()) parts.push_back("suite " + md(v));
  if (auto v = bench_text(bench, "kernel_set"); !v.empty()) parts.push_back("kernels " + md(v));
  const json& prov = bench.is_object() && bench.contains("provenance") ? bench.at("provenance") : json();
  for (const char* k : {"device_name", "driver", "torch", "cuda", "cudal1", "protocol"})
    if (auto v = bench_text(prov, k); !v.empty())
      parts.push_back(std::string(k == std::string("device_name") ? "device" : k) + " " + md(v));
  if (!parts.empty()) {
    for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "; " : "") + parts[i];
    out += "\n\n";
  }

  out += "| level | baseline | tasks | correct | mean | median | geomean | share >1.01x | n/a | invalid |\n";
  out += "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (auto& l : s.levels) {
    std::string level = l.level == "all" ? "all" : "level " + l.level;
    std::string correct = l.tasks ? std::to_string(l.accepted) + "/" + std::to_string(l.tasks) +
                                        " (" + format_percent(l.correct_rate) + ")" : "-";
    for (auto& b : l.baselines)
      out += "| " + level + " | " + md(b.baseline, 80) + " | " + std::to_string(l.tasks) + " | " +
             correct + " | " + stat(b.mean) + " | " + stat(b.median) + " | " + stat(b.geomean) +
             " | " + (l.tasks ? format_percent(b.share_above) : "-") + " | " +
             std::to_string(b.unavailable) + " | " + std::to_string(b.invalid) + " |\n";
    if (l.baselines.empty())
      out += "| " + level + " | - | " + std::to_string(l.tasks) + " | " + correct + " | | | | | | |\n";
  }
  out += "\nStatistics are over accepted rows with a valid speedup; share >1.01x is over all tasks "
         "of the level (failed rows count as not faster); n/a: baseline not available.\n";

  out += "\nFlags: " + std::to_string(s.flags);
  if (s.flags) {
    out += "\n\n| flag | count | blocking |\n| --- | ---: | ---: |\n";
    for (auto& [name, n] : s.flag_counts) {
      auto it = s.flag_blocking.find(name);
      out += "| " + md(name, 80) + " | " + std::to_string(n) + " | " +
             std::to_string(it == s.flag_blocking.end() ? 0 : it->second) + " |\n";
    }
  } else {
    out += "\n";
  }
  return out;
}

}  // namespace cudal1
