// cli/build: the build service for one candidate, for people and for the benchmark: which
// load_inline extensions it builds at import, by which path, from the cache or not, how long.
#include <iostream>
#include <memory>

#include "build/build.h"
#include "cli/commands.h"
#include "cli/device_option.h"
#include "cli/queue_setup.h"
#include "core/error.h"
#include "report/table.h"

namespace cudal1::cli {

namespace {

struct BuildArgs {
  std::string candidate, task, device = "cpu", cache, python, arch, clang;
  bool json_out = false, no_fast = false;
  int jobs = 0;
  std::size_t memory_budget_mb = 0;
  double timeout_s = 900;
};

void run_build(const BuildArgs& a) {
  BuildConfig cfg;
  cfg.cache_root = a.cache;
  cfg.python = a.python;
  cfg.jobs = a.jobs;
  cfg.memory_budget_mb = a.memory_budget_mb;
  cfg.arch_list = a.arch;
  cfg.fast_path = !a.no_fast;
  cfg.clang = a.clang;
  // The service waits, when it goes, for precompiled headers it started building, so that
  // the next build finds them; the result is printed before that.
  BuildService svc(cfg);
  BuildOutcome out = svc.build_candidate(a.candidate, a.device, a.timeout_s, a.task);
  if (a.json_out) {
    std::cout << out.to_json().dump() << std::endl;
    return;
  }
  std::cout << "build: " << build_kind_name(out.kind) << " in " << format_fixed(out.seconds, 1) << " s\n";
  Table t({"module", "path", "cache", "seconds", "so / error"}, {false, false, false, true, false});
  for (auto& m : out.modules) {
    std::string what = m.error.empty() ? m.so_path : m.error.substr(0, m.error.find('\n'));
    t.add_row({m.name, m.path, m.cache_hit ? "hit" : "miss", format_fixed(m.seconds, 1), what});
  }
  for (auto& [name, why] : out.in_process) t.add_row({name, "in_process", "-", "-", why});
  if (!out.modules.empty() || !out.in_process.empty()) t.print(std::cout);
  if (!out.log.empty()) std::cout << "\n" << out.log << "\n";
}

}  // namespace

void register_build(CLI::App& app) {
  auto args = std::make_shared<BuildArgs>();
  auto* cmd = app.add_subcommand("build", "Build a candidate's load_inline extensions with the build service "
                                          "(cached by content; fast path: precompiled header and split CUDA)");
  cmd->add_option("candidate", args->candidate, "candidate file (class ModelNew, load_inline at import)")->required();
  cmd->add_option("--task", args->task, "its task: ModelNew(*get_init_inputs()) is constructed too, so that "
                  "load_inline calls in the constructor are built as well");
  cmd->add_option("--device,-d", args->device, "the device its module-level code runs on: cpu, cuda or cuda:N")->transform(device_names())
      ->capture_default_str();
  cmd->add_flag("--no-fast", args->no_fast, "torch's own commands only (the plain path)");
  cmd->add_option("--clang", args->clang, kClangOptionHelp);
  cmd->add_flag("--json", args->json_out, "print one JSON object on stdout");
  cmd->add_option("--cache", args->cache, "build cache folder (default $CUDAL1_CACHE/builds)");
  cmd->add_option("--jobs,-j", args->jobs, "compilers at once; 0: the machine's cores")->capture_default_str();
  cmd->add_option("--memory-budget-mb", args->memory_budget_mb, "memory the compilers may take together; 0: 80 % of "
                  "what is available")->capture_default_str();
  cmd->add_option("--arch", args->arch, "TORCH_CUDA_ARCH_LIST for CUDA code (default: the environment's, else the card's)");
  cmd->add_option("--timeout", args->timeout_s, "seconds for recording and building")->capture_default_str();
  cmd->add_option("--python", args->python, "Python interpreter with torch");
  cmd->callback([args] { run_build(*args); });
}

}  // namespace cudal1::cli
