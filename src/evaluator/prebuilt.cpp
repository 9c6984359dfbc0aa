#include "evaluator/prebuilt.h"

#include "core/error.h"

namespace fs = std::filesystem;

namespace cudal1 {

nlohmann::json stage_prebuilt(const BuildOutcome& outcome, const fs::path& candidate_dir) {
  if (outcome.kind == BuildOutcome::Kind::capture_failed) return nullptr;
  nlohmann::json entries = nlohmann::json::array();
  fs::path dir = candidate_dir / "prebuilt";
  for (auto& m : outcome.modules) {
    if (!m.error.empty()) {
      entries.push_back({{"spec_id", m.spec_id}, {"error", m.error}});
      continue;
    }
    fs::create_directories(dir);
    fs::path copy = dir / (m.spec_id.substr(0, 32) + "_" + m.name + ".so");
    std::error_code ec;
    fs::copy_file(m.so_path, copy, fs::copy_options::overwrite_existing, ec);
    if (ec)
      throw Error(ErrorKind::runner, "cannot copy the built module " + m.so_path + " for the candidate: " + ec.message(),
                  "check the free space and permissions of the scratch folder (CUDAL1_SCRATCH)");
    entries.push_back({{"spec_id", m.spec_id}, {"so", copy.string()}, {"module", m.name}, {"content_id", m.content_id}});
  }
  return entries;
}

}  // namespace cudal1
