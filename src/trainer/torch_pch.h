// trainer/torch_pch.h — the headers precompiled once for the trainer's library and tests: the
// narrow parts of libtorch the model stack uses (tensors and ATen ops, nn::Module, grad modes,
// CPU generators), not <torch/torch.h>, which drags in data loaders, optimisers and JIT.
#pragma once

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/module.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <torch/version.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>
