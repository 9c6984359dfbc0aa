#include "report/result_notes.h"

#include <cstdio>

namespace cudal1 {

namespace {

std::string format(const char* spec, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, spec, v);
  return buf;
}

// Three significant figures, never an exponent for the times a person meets.
std::string milliseconds(double ms) { return format(ms >= 100 ? "%.0f ms" : "%.3g ms", ms); }

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
  return "noisy: shrunk to " + format("%.2fx", speedup->second) + "; eager " + milliseconds(eager->second) +
         " vs candidate " + milliseconds(cand->second) + " (raw " + format("%.2fx", s.value("raw_speedup", 0.0)) +
         ", buckets spread " + format("%.0f%%", 100 * s.value("spread", 0.0)) + tries + ")";
}

}  // namespace cudal1
