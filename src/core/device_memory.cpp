#include "core/device_memory.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "core/device.h"

namespace cudal1 {

namespace {

// What nvidia-smi -i gets for the process's N-th visible device. Only characters an index, a
// UUID or a PCI bus id use pass: the value goes into a shell command line.
std::optional<std::string> smi_id(int n) {
  std::string id = std::to_string(n);
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"); visible && *visible) {
    std::vector<std::string> entries;
    std::stringstream in(visible);
    for (std::string e; std::getline(in, e, ',');) entries.push_back(e);
    if (n >= int(entries.size())) return std::nullopt;
    id = entries[std::size_t(n)];
  }
  if (id.empty()) return std::nullopt;
  for (char c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != ':' && c != '.') return std::nullopt;
  return id;
}

}  // namespace

std::optional<uint64_t> cuda_device_total_bytes(const std::string& device) {
  Device d;
  try {
    d = Device::parse(device);
  } catch (const std::exception&) {
    return std::nullopt;  // not a device name: nothing to ask
  }
  if (!d.is_cuda()) return std::nullopt;
  std::optional<std::string> id = smi_id(d.index.value_or(0));
  if (!id) return std::nullopt;
  std::string cmd = "nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i " + *id + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return std::nullopt;
  char line[256] = {0};
  bool got = std::fgets(line, sizeof line, p) != nullptr;
  int status = pclose(p);
  if (!got || status != 0) return std::nullopt;
  char* end = nullptr;
  double mib = std::strtod(line, &end);
  if (end == line || mib <= 0) return std::nullopt;
  return uint64_t(mib * 1048576.0);
}

}  // namespace cudal1
