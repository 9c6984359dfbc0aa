// cli/commands.h — the subcommands of build/cudal1; each registers its options on the app and
// runs when chosen.
#pragma once

#include <CLI/CLI.hpp>

namespace cudal1::cli {

// `cudal1 eval`: one task, one candidate, one verdict.
void register_eval(CLI::App& app);

// `cudal1 tasks list|show`: the bundled suite with computed FLOPs and bytes.
void register_tasks(CLI::App& app);

}  // namespace cudal1::cli
