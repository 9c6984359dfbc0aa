#include "report/result_notes.h"

#include <cstdio>

#include "core/format.h"

namespace cudal1 {

namespace {

// Three significant figures, never an exponent for the times a person meets.
std::string milliseconds(double ms) {
  char buf[64];
  std::snprintf(buf, sizeof buf, ms >= 100 ? "%.0f ms" : "%.3g ms", ms);
  return buf;
}

bool has_flag(const EvalResult& r, const std::string& id) {
  for (auto& f : r.flags)
    if (f.id == id) return true;
  return false;
}

}  // namespace

std::string result_source(const EvalResult& r) { return r.from_store ? "store" : "run"; }

std::string noise_note(const EvalResult& r) {
  auto speedup = r.speedup.find("eager");
  auto eager = r.runtime_ms.find("eager"), cand = r.runtime_ms.find("candidate");
  if (!has_flag(r, "timing_noisy") || speedup == r.speedup.end() || eager == r.runtime_ms.end() ||
      cand == r.runtime_ms.end())
    return "";
  const json& s = r.statistics;
  std::string tries = s.contains("tries") ? " in each of " + std::to_string(s.value("tries", 1)) + " tries" : "";
  return "noisy: shrunk to " + format_fixed(speedup->second, 2) + "x" + "; eager " + milliseconds(eager->second) +
         " vs candidate " + milliseconds(cand->second) + " (raw " + format_fixed(s.value("raw_speedup", 0.0), 2) + "x" +
         ", buckets spread " + format_fixed(100 * s.value("spread", 0.0), 0) + "%" + tries + ")";
}

}  // namespace cudal1
