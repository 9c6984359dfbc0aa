// report/bench_report.h — the reports of `cudal1 bench`: one self-contained HTML page and a short
// Markdown summary, both from the bench JSON below. The statistics, and their definitions, are in
// report/bench_stats.h.
//
// Input (every field optional; wrong types read as absent, since rows come from untrusted files):
//   title       string   free text, the page's heading ("CUDA-L1 a100.jsonl on NVIDIA H200")
//   suite       string   free text: the task suite
//   kernel_set  string   free text: the kernels scored
//   provenance  object   strings: device_name, driver, torch, cuda, cudal1, protocol (shown in
//                        that order; any other key after them)
//   mixed_provenance [string] provenance keys whose value differs between rows (a run resumed on
//                        another card): the reports say so under the provenance
//   carried_rows object  {count: int, files: [string]}: rows taken from earlier runs' bench JSON
//                        (report/bench_carried_rows.h); the reports count them
//   baselines   [string] the order to show baselines in; when absent, every key of any row's
//                        speedup, "eager" first. Plots use "eager", else the first baseline.
//   rows        [object] one per task:
//     task                  string  "level1/23_silu"
//     level                 int     1, 2, 3 (any other integer forms its own group)
//     status                string  ok | incorrect | compile_error | runtime_error | timeout |
//                                   crash | rejected | error (anything else shows as is) |
//                                   not_scored (a row the run has not scored yet: outside every
//                                   statistic and count, which say how many were left)
//     reason                string  with not_scored: why, and what to run
//     accepted              bool    only exactly true counts as accepted
//     speedup               object  baseline -> t_baseline / t_candidate; absent or null: that
//                                   baseline is not available for this task
//     baseline_unavailable  object  baseline -> reason (string); makes the baseline n/a even when
//                                   a number is given
//     claimed_speedup       number  what the kernel set's authors claimed (against eager)
//     claimed               object  baseline -> what they claimed against it (report/bench_claims.h)
//     error                 string  why a row that failed failed (its start)
//     task_hash, candidate_hash  string  SHA-256 of the task and candidate files the row scored
//     provenance            object  the result's provenance (protocol_key among it): what a later
//                                   run takes the row again under (report/bench_carried_rows.h)
//     carried_from          string  the earlier bench JSON the row was taken from, as it wrote it
//     device_name           string  the card that measured the row: with rows from two cards or
//                                   more, the "Per card" tables group by it (report/bench_provenance.h)
//     sol_fraction          number  fraction of speed of light, 0..1
//     runtime_ms            object  "candidate", "eager" (others ignored), milliseconds
//     flags                 [object] {name (or id), severity: warn | block | info, evidence}
//
// Every string from the input is escaped (report/html.h). Numbers that are not finite and > 0
// are invalid: never plotted, counted as invalid, shown as "invalid".
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "report/bench_stats.h"

namespace cudal1 {

// One HTML page: inline CSS and SVG, a few lines of inline script (click a column heading to
// sort), a Content-Security-Policy that allows nothing else. No URL is fetched.
std::string bench_html(const nlohmann::json& bench);

// Title, provenance line, the summary table (level x baseline), flags counted by name.
std::string bench_markdown(const nlohmann::json& bench);

}  // namespace cudal1
