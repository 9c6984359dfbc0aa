// trainer/device: where a model runs, from a command line's words. The model runs in this
// process on its libtorch, so what that libtorch reaches decides, not what nvidia-smi shows.
#pragma once

#include <string>

#include <torch/types.h>

namespace cudal1::trainer {

// "auto": cuda when this process's libtorch sees a GPU, else cpu. Any other name as given.
std::string resolve_device(const std::string& name);

// The device named (cpu, cuda, cuda:N). Error(usage) for a name torch does not know and for a
// CUDA device this libtorch cannot reach, whose hint names `flag`, the option that asked for it.
torch::Device parse_device(const std::string& name, const std::string& flag);

}  // namespace cudal1::trainer
