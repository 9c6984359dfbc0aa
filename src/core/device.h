// core/device.h — where work runs: the host ("cpu") or a CUDA device ("cuda", "cuda:N"). Every
// command parses its --device through Device::parse, so each accepts and rejects the same names.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace cudal1 {

struct Device {
  enum class Kind { cpu, cuda };
  Kind kind = Kind::cpu;
  std::optional<int> index;  // cuda:N; none: the process's current CUDA device

  bool is_cuda() const { return kind == Kind::cuda; }
  std::string str() const;  // "cpu", "cuda" or "cuda:N": what parse() reads back
  bool operator==(const Device&) const = default;

  // Throws Error(usage) naming `flag` for anything but cpu, cuda and cuda:N (N a small integer).
  static Device parse(std::string_view text, std::string_view flag = "--device");
};

}  // namespace cudal1
