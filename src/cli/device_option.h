// cli/device_option.h — the check every command's --device option carries: names go through
// Device::parse (core/device.h), so a name one command refuses no other accepts, and the value a
// command sees is normalised ("cuda:0", never " cuda:00").
#pragma once

#include <CLI/CLI.hpp>

namespace cudal1 {

// For --device and its kin; with `auto_allowed`, "auto" also passes through unchanged (commands
// that pick CUDA when a GPU is visible).
CLI::Validator device_names(bool auto_allowed = false);

}  // namespace cudal1
