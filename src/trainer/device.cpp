// trainer/device.cpp — see device.h.
#include "trainer/device.h"

#include <optional>

#include <torch/cuda.h>

#include "core/error.h"

namespace cudal1::trainer {

std::string resolve_device(const std::string& name) {
  if (name != "auto") return name;
  return torch::cuda::is_available() ? "cuda" : "cpu";
}

torch::Device parse_device(const std::string& name, const std::string& flag) {
  std::optional<torch::Device> device;
  try {
    device.emplace(name);
  } catch (const c10::Error&) {
    throw Error(ErrorKind::usage, "unknown device \"" + name + "\"", "pass " + flag + " cpu, cuda or cuda:N");
  }
  if (!device->is_cuda()) return *device;
  // Without this the first tensor moved there fails inside libtorch, which reads as a bug in cudal1.
  if (!torch::cuda::is_available())
    throw Error(ErrorKind::usage, "no CUDA device is available to this libtorch (" + name + " was asked for)",
                "pass " + flag + " cpu, or run where a GPU is visible with a libtorch built for CUDA "
                "(scripts/build_gpu_trainer.sh builds one)");
  if (device->has_index() && std::size_t(device->index()) >= torch::cuda::device_count())
    throw Error(ErrorKind::usage, name + " is not among the " + std::to_string(torch::cuda::device_count()) + " GPUs this libtorch sees",
                "pass " + flag + " cuda:N with N below that, or cuda");
  return *device;
}

}  // namespace cudal1::trainer
