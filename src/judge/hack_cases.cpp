#include "judge/hack_cases.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "core/error.h"
#include "core/hash.h"
#include "evaluator/fixture_header.h"
#include "judge/similarity.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace cudal1::judge {

namespace {

// Families of the fixture corpus that are not hacks: honest code, and plain failures (a crash, a
// timeout, a wrong answer with no trick behind it) that test the evaluator's robustness.
const std::set<std::string> kNotHacks = {"honest", "robustness", "unclassified", ""};

// Shingles more than this share of the cases have are boilerplate, once there are enough cases to tell.
constexpr double kCommonShare = 0.3;
constexpr std::size_t kMinCasesForCommon = 10;

}  // namespace

json evaluator_evidence(const EvalResult& r) {
  json flags = json::array();
  for (auto& f : r.flags)
    flags.push_back({{"id", f.id}, {"severity", severity_name(f.severity)}, {"evidence", f.evidence}, {"occurrences", f.occurrences}});
  json e = {{"status", status_name(r.status)}, {"accepted", r.accepted}, {"speedup", r.speedup}, {"flags", flags}};
  if (!r.error.empty()) e["error"] = r.error;
  if (auto a = r.statistics.find("attribution"); a != r.statistics.end() && a->is_object() && a->contains("top_kernels"))
    e["attribution_top"] = (*a)["top_kernels"];
  return e;
}

std::optional<HackCase> case_of_rejected(const EvalResult& r, const std::string& code, const std::string& reference) {
  if (r.accepted) return std::nullopt;
  // A result refused by the judge alone is already a "confirmed" case.
  auto blocking = std::find_if(r.flags.begin(), r.flags.end(),
                               [](const Flag& f) { return f.severity == Severity::block && f.id != kJudgeHackFlag; });
  if (blocking == r.flags.end()) return std::nullopt;
  HackCase c;
  c.family = blocking->id;
  c.source = "rejected";
  c.task_hash = r.task_hash;
  c.candidate_hash = r.candidate_hash.empty() ? sha256_hex(code) : r.candidate_hash;
  c.code = code;
  c.reference = reference;
  c.evidence = evaluator_evidence(r);
  return c;
}

std::size_t import_fixtures(Store& store, const fs::path& dir) {
  if (!fs::is_directory(dir))
    throw Error(ErrorKind::input, "no fixture folder " + dir.string(),
                "name a folder of red-team candidates, such as tests/fixtures/candidates in cudal1's source tree");
  std::vector<fs::path> files;
  for (auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".py") files.push_back(entry.path());
  std::sort(files.begin(), files.end());  // ids in name order, the same on every machine
  // The fixtures' tasks are beside their folder (tests/fixtures/tasks); "candidates/" names it too.
  fs::path folder = fs::absolute(dir).lexically_normal();
  if (!folder.has_filename()) folder = folder.parent_path();
  const fs::path tasks_dir = folder.parent_path() / "tasks";
  std::size_t hacks = 0;
  for (auto& file : files) {
    std::string text = read_file(file);
    FixtureHeader f = read_fixture_header(text);
    std::string family = f.first("family");
    bool refused = f.first("expect-accepted") == "false", neutralised = !f.first("expect-max-speedup").empty();
    if (kNotHacks.count(family) || !(refused || neutralised)) continue;
    HackCase c;
    c.family = family;
    c.source = "fixture";
    std::string task = f.first("task");
    fs::path task_file = tasks_dir / task;
    if (!task.empty() && fs::is_regular_file(task_file)) {
      c.reference = read_file(task_file);
      c.task_hash = sha256_hex(c.reference);
    }
    c.candidate_hash = sha256_hex(text);
    c.code = f.code;
    c.evidence = {{"fixture", file.filename().string()}, {"task", task}, {"why", f.first("why")},
                  {"expect_status", f.first("expect-status").empty() ? f.first("expect-status-any") : f.first("expect-status")},
                  {"expect_flags", f.values["expect-flag"]}};
    store.add_hack_case(c);
    ++hacks;
  }
  if (hacks == 0)
    throw Error(ErrorKind::input, "no hack fixture in " + dir.string(),
                "a hack fixture is a .py file with a `# family:` header naming a hack family and `# expect-accepted: false`; "
                "cudal1's own are in tests/fixtures/candidates");
  return hacks;
}

std::size_t import_rejected(Store& store) {
  std::size_t n = 0;
  for (auto& b : store.blocked_evaluations()) {
    const std::string& task = b.result.task_path;
    std::string reference = !task.empty() && fs::is_regular_file(task) ? read_file(task) : "";
    if (reference.size() && sha256_hex(reference) != b.result.task_hash) reference.clear();  // changed since
    if (auto c = case_of_rejected(b.result, b.source, reference)) {
      store.add_hack_case(*c);
      ++n;
    }
  }
  return n;
}

std::vector<Neighbour> nearest(const std::vector<HackCase>& cases, const std::string& code, const std::string& reference,
                               std::size_t k, const std::string& exclude_candidate_hash) {
  std::vector<const HackCase*> kept;
  std::vector<Shingles> sets;
  for (auto& c : cases)
    if (exclude_candidate_hash.empty() || c.candidate_hash != exclude_candidate_hash) {
      kept.push_back(&c);
      sets.push_back(distinctive_shingles(c.code, c.reference));
    }
  Shingles query = distinctive_shingles(code, reference);
  if (kept.size() >= kMinCasesForCommon) {
    std::unordered_map<uint64_t, std::size_t> cases_with;
    for (auto& s : sets)
      for (uint64_t x : s) ++cases_with[x];
    auto common = [&](uint64_t x) {
      auto it = cases_with.find(x);
      return it != cases_with.end() && double(it->second) > kCommonShare * double(kept.size());
    };
    for (auto& s : sets) std::erase_if(s, common);
    std::erase_if(query, common);
  }
  MinHash q(query);
  std::vector<Neighbour> all;
  for (std::size_t i = 0; i < kept.size(); ++i) all.push_back({*kept[i], q.similarity(MinHash(sets[i]))});
  std::stable_sort(all.begin(), all.end(), [](const Neighbour& a, const Neighbour& b) { return a.similarity > b.similarity; });
  if (all.size() > k) all.resize(k);
  return all;
}

}  // namespace cudal1::judge
