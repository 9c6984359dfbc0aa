#include "core/device.h"

#include <charconv>

#include "core/error.h"

namespace cudal1 {

std::string Device::str() const {
  if (kind == Kind::cpu) return "cpu";
  return index ? "cuda:" + std::to_string(*index) : "cuda";
}

Device Device::parse(std::string_view text, std::string_view flag) {
  if (text == "cpu") return {};
  if (text == "cuda") return {Kind::cuda, std::nullopt};
  constexpr std::string_view prefix = "cuda:";
  if (text.substr(0, prefix.size()) == prefix) {
    std::string_view digits = text.substr(prefix.size());
    int index = -1;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    bool plain = !digits.empty() && digits.size() <= 4 && digits.find_first_not_of("0123456789") == digits.npos;
    if (plain && ec == std::errc() && end == digits.data() + digits.size())
      return {Kind::cuda, index};
  }
  throw Error(ErrorKind::usage, "unknown device '" + std::string(text) + "'",
              "pass " + std::string(flag) + " cpu, cuda or cuda:N (N: a GPU's index, as nvidia-smi numbers them)");
}

}  // namespace cudal1
