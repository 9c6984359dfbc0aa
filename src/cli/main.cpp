// build/cudal1 — entry point: parses the command line and maps errors to exit statuses.
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "core/paths.h"
#include "runner/process.h"

namespace cudal1::cli {
std::unique_ptr<Store> open_store(const std::string& db, bool no_store) {
  if (no_store) return nullptr;
  return std::make_unique<Store>(db.empty() ? default_store_path() : std::filesystem::path(db));
}
#ifndef CUDAL1_HAVE_TRAINER
// This build has no libtorch: `train` is still listed, and says how to get it.
void register_train(CLI::App& app) {
  CLI::App* train = app.add_subcommand("train", "Train a model on the evaluator's verdicts (not in this build)");
  train->allow_extras();
  train->callback([] {
    throw Error(ErrorKind::usage, "this build of cudal1 has no trainer: libtorch was not found when it was configured",
                "install libtorch-dev (scripts/setup.sh does) and rebuild; the static build for the GPU machine leaves the trainer out");
  });
}
#endif
#ifndef CUDAL1_HAVE_HTTP
// The static build for the GPU machine has no HTTP library: `serve` says where to run it.
void register_serve(CLI::App& app) {
  CLI::App* serve = app.add_subcommand("serve", "The reward service over HTTP (not in this build)");
  serve->allow_extras();
  serve->callback([] {
    throw Error(ErrorKind::usage, "this build of cudal1 has no HTTP library (the static build for GPU machines)",
                "run `cudal1 serve` from a regular build (make), which links cpp-httplib");
  });
}
#endif
}  // namespace cudal1::cli

int main(int argc, char** argv) {
  CLI::App app{"cudal1: verified CUDA optimisation of PyTorch modules (CUDA-L1, as software)"};
  app.set_version_flag("--version", std::string("cudal1 ") + CUDAL1_VERSION);
  app.require_subcommand(1);
  cudal1::cli::register_eval(app);
  cudal1::cli::register_tasks(app);
  cudal1::cli::register_lint(app);
  cudal1::cli::register_batch(app);
  cudal1::cli::register_build(app);
  cudal1::cli::register_baselines(app);
  cudal1::cli::register_enrich(app);
  cudal1::cli::register_bench(app);
  cudal1::cli::register_optimize(app);
  cudal1::cli::register_train(app);
  cudal1::cli::register_serve(app);
  cudal1::cli::register_worker(app);
  cudal1::cli::register_workers(app);
  cudal1::cli::register_hacks(app);

  // Orphans a candidate leaves behind come back to us, so they can be killed.
  cudal1::protect_parent_process();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every malformed command line is a usage error (2).
    return app.exit(e) == 0 ? 0 : cudal1::error_exit_code(cudal1::ErrorKind::usage);
  } catch (const cudal1::Error& e) {
    std::cerr << "cudal1: " << e.describe() << "\n";
    return cudal1::error_exit_code(e.kind());
  } catch (const std::exception& e) {
    std::cerr << "cudal1: internal error: " << e.what()
              << "\n  hint: this is a bug in cudal1; please report it with the command you ran\n";
    return 70;
  }
  return 0;
}
