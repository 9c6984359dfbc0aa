#include "cli/device_option.h"

#include "core/device.h"
#include "core/error.h"

namespace cudal1 {

CLI::Validator device_names(bool auto_allowed) {
  return CLI::Validator(
      [auto_allowed](std::string& name) -> std::string {
        if (auto_allowed && name == "auto") return {};
        try {
          name = Device::parse(name).str();
          return {};
        } catch (const Error& e) {
          return e.message() + "; " + (auto_allowed ? "use auto, cpu, cuda or cuda:N" : "use cpu, cuda or cuda:N");
        }
      },
      auto_allowed ? "auto|cpu|cuda|cuda:N" : "cpu|cuda|cuda:N");
}

}  // namespace cudal1
