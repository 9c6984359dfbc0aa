// trainer/device.cpp — see device.h.
#include "trainer/device.h"

#include <torch/cuda.h>

#include "core/device.h"
#include "core/error.h"

namespace cudal1::trainer {

std::string resolve_device(const std::string& name) {
  if (name != "auto") return name;
  return torch::cuda::is_available() ? "cuda" : "cpu";
}

torch::Device parse_device(const std::string& name, const std::string& flag) {
  // The names every command accepts (core/device.h), not all of libtorch's (mps, meta, ...).
  const Device parsed = Device::parse(name, flag);
  if (!parsed.is_cuda()) return torch::Device(torch::kCPU);
  const torch::Device device(torch::kCUDA, static_cast<c10::DeviceIndex>(parsed.index.value_or(-1)));
  // Without this the first tensor moved there fails inside libtorch, which reads as a bug in cudal1.
  if (!torch::cuda::is_available())
    throw Error(ErrorKind::usage, "no CUDA device is available to this libtorch (" + name + " was asked for)",
                "pass " + flag + " cpu, or run where a GPU is visible with a libtorch built for CUDA "
                "(scripts/build_gpu_trainer.sh builds one)");
  if (device.has_index() && std::size_t(device.index()) >= torch::cuda::device_count())
    throw Error(ErrorKind::usage, name + " is not among the " + std::to_string(torch::cuda::device_count()) + " GPUs this libtorch sees",
                "pass " + flag + " cuda:N with N below that, or cuda");
  return device;
}

}  // namespace cudal1::trainer
