#include "report/bench_stats.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/stats.h"

namespace cudal1 {

using json = nlohmann::json;

namespace {

const json& empty_object() {
  static const json kEmpty = json::object();
  return kEmpty;
}

const json& field(const json& obj, const char* key) {
  if (!obj.is_object()) return empty_object();
  auto it = obj.find(key);
  return it == obj.end() ? empty_object() : *it;
}

bool has_field(const json& obj, const char* key) {
  return obj.is_object() && obj.contains(key) && !obj.at(key).is_null();
}

std::optional<double> finite_positive(const json& v) {
  if (!v.is_number()) return std::nullopt;
  double d = v.get<double>();
  if (!std::isfinite(d) || d <= 0) return std::nullopt;
  return d;
}

BenchBaselineStats baseline_stats(const std::vector<const json*>& rows, const std::string& b) {
  BenchBaselineStats s;
  s.baseline = b;
  std::vector<double> values;
  for (const json* row : rows) {
    if (!bench_accepted(*row)) continue;
    BenchSpeedup sp = bench_speedup(*row, b);
    if (sp.kind == BenchSpeedupKind::unavailable) ++s.unavailable;
    else if (sp.kind == BenchSpeedupKind::invalid) ++s.invalid;
    else values.push_back(sp.value);
  }
  s.measured = static_cast<int>(values.size());
  s.above = static_cast<int>(std::count_if(values.begin(), values.end(),
                                           [](double v) { return v > 1.01; }));
  if (!rows.empty()) s.share_above = static_cast<double>(s.above) / rows.size();
  if (values.empty()) return s;
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / values.size();
  s.median = median(values);
  s.geomean = geometric_mean(values);
  return s;
}

BenchLevelStats level_stats(const std::string& level, const std::vector<const json*>& rows,
                            const std::vector<std::string>& baselines, int not_scored) {
  BenchLevelStats s;
  s.level = level;
  s.not_scored = not_scored;
  s.tasks = static_cast<int>(rows.size());
  for (const json* row : rows) {
    s.accepted += bench_accepted(*row);
    ++s.statuses[bench_status(*row)];
  }
  if (s.tasks) s.correct_rate = static_cast<double>(s.accepted) / s.tasks;
  for (auto& b : baselines) s.baselines.push_back(baseline_stats(rows, b));
  return s;
}

}  // namespace

const json& bench_rows(const json& bench) {
  static const json kNone = json::array();
  const json& rows = field(bench, "rows");
  return rows.is_array() ? rows : kNone;
}

std::vector<std::string> bench_baselines(const json& bench) {
  std::vector<std::string> out;
  auto add = [&](const std::string& b) {
    if (std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
  };
  const json& listed = field(bench, "baselines");
  if (listed.is_array()) {
    for (auto& b : listed)
      if (b.is_string()) add(b.get<std::string>());
    return out;
  }
  bool eager = false;
  std::vector<std::string> seen;
  for (auto& row : bench_rows(bench)) {
    const json& sp = field(row, "speedup");
    if (!sp.is_object()) continue;
    for (auto& [k, v] : sp.items()) {
      if (k == "eager") eager = true;
      else if (std::find(seen.begin(), seen.end(), k) == seen.end()) seen.push_back(k);
    }
  }
  if (eager) add("eager");
  for (auto& b : seen) add(b);
  return out;
}

std::string bench_text(const json& obj, const char* key, const std::string& fallback) {
  const json& v = field(obj, key);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number() || v.is_boolean()) return v.dump();
  return fallback;
}

bool bench_accepted(const json& row) {
  const json& v = field(row, "accepted");
  return v.is_boolean() && v.get<bool>();
}

std::optional<int> bench_level(const json& row) {
  const json& v = field(row, "level");
  if (v.is_number_integer()) {
    auto l = v.get<long long>();
    if (l >= -1000000 && l <= 1000000) return static_cast<int>(l);
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::abs(d) <= 1e6) return static_cast<int>(d);
  } else if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (!s.empty() && s.size() <= 6 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::stoi(s);
  }
  return std::nullopt;
}

std::string bench_status(const json& row) {
  std::string s = bench_text(row, "status");
  return s.empty() ? "unknown" : s;
}

bool bench_not_scored(const json& row) { return bench_text(row, "status") == "not_scored"; }

bool bench_has(const json& obj, const char* key) { return has_field(obj, key); }

std::optional<double> bench_number(const json& obj, const char* key) {
  const json& v = field(obj, key);
  if (!v.is_number() || !std::isfinite(v.get<double>())) return std::nullopt;
  return v.get<double>();
}

std::optional<double> bench_positive(const json& obj, const char* key) {
  return finite_positive(field(obj, key));
}

BenchSpeedup bench_speedup(const json& row, const std::string& baseline) {
  BenchSpeedup out;
  const json& reasons = field(row, "baseline_unavailable");
  if (has_field(reasons, baseline.c_str())) {
    const json& r = reasons.at(baseline);
    out.reason = r.is_string() ? r.get<std::string>() : "unavailable";
    return out;  // a reason wins over a number: the harness said it could not measure
  }
  const json& sp = field(row, "speedup");
  if (!has_field(sp, baseline.c_str())) return out;
  if (auto v = finite_positive(sp.at(baseline))) {
    out.kind = BenchSpeedupKind::measured;
    out.value = *v;
  } else {
    out.kind = BenchSpeedupKind::invalid;
  }
  return out;
}

std::vector<BenchFlag> bench_flags(const json& row) {
  std::vector<BenchFlag> out;
  const json& flags = field(row, "flags");
  if (!flags.is_array()) return out;
  for (auto& f : flags) {
    BenchFlag flag;
    flag.name = bench_text(f, "name", bench_text(f, "id", "?"));
    flag.severity = bench_text(f, "severity", "?");
    flag.evidence = bench_text(f, "evidence");
    out.push_back(std::move(flag));
  }
  return out;
}

std::vector<BenchGroup> bench_groups(const json& bench) {
  std::map<int, BenchGroup> by_level;
  for (int level : {1, 2, 3}) by_level[level].level = std::to_string(level);
  BenchGroup all{.level = "all"};
  for (auto& row : bench_rows(bench)) {
    std::optional<int> l = bench_level(row);
    BenchGroup* group = l ? &by_level[*l] : nullptr;
    if (group) group->level = std::to_string(*l);
    if (bench_not_scored(row)) {
      ++all.not_scored;
      if (group) ++group->not_scored;  // the level is shown, with nothing scored yet
      continue;
    }
    all.rows.push_back(&row);
    if (group) group->rows.push_back(&row);
  }
  std::vector<BenchGroup> out;
  for (auto& [level, group] : by_level) out.push_back(std::move(group));
  out.push_back(std::move(all));
  return out;
}

std::string bench_group_name(const std::string& level) { return level == "all" ? "all" : "level " + level; }

BenchStats bench_stats(const json& bench) {
  BenchStats s;
  s.baselines = bench_baselines(bench);
  for (const BenchGroup& g : bench_groups(bench)) {
    s.levels.push_back(level_stats(g.level, g.rows, s.baselines, g.not_scored));
    if (g.level != "all") continue;
    s.not_scored = g.not_scored;
    for (const json* row : g.rows)
      for (auto& f : bench_flags(*row)) {
        ++s.flags;
        ++s.flag_counts[f.name];
        if (f.severity == "block") ++s.flag_blocking[f.name];
      }
  }
  return s;
}

}  // namespace cudal1
