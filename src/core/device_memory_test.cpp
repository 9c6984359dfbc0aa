// The device-memory probe against a stand-in nvidia-smi on PATH: which device it asks for, and
// that anything but a clean answer is "unknown".
#include "core/device_memory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

namespace fs = std::filesystem;
using cudal1::cuda_device_total_bytes;

namespace {

// Sets an environment variable for the scope, putting back what was there.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(std::string n, const std::optional<std::string>& value) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str())) old = v;
    if (value) setenv(name.c_str(), value->c_str(), 1);
    else unsetenv(name.c_str());
  }
  ~ScopedEnv() {
    if (old) setenv(name.c_str(), old->c_str(), 1);
    else unsetenv(name.c_str());
  }
};

// A folder with an nvidia-smi that records its arguments and prints `answer`.
struct FakeSmi {
  fs::path dir = fs::temp_directory_path() / ("cudal1-fake-smi-" + std::to_string(getpid()));
  fs::path args = dir / "args";
  FakeSmi(const std::string& answer, int status = 0) {
    fs::create_directories(dir);
    std::ofstream(dir / "nvidia-smi") << "#!/bin/sh\necho \"$@\" > '" << args.string() << "'\necho '" << answer
                                      << "'\nexit " << status << "\n";
    fs::permissions(dir / "nvidia-smi", fs::perms::owner_all);
  }
  ~FakeSmi() { fs::remove_all(dir); }
  std::string asked() const {
    std::ifstream in(args);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
};

}  // namespace

TEST(DeviceMemory, AsksNvidiaSmiForTheNamedDevice) {
  FakeSmi smi("81559");
  ScopedEnv path("PATH", smi.dir.string());
  ScopedEnv visible("CUDA_VISIBLE_DEVICES", std::nullopt);
  EXPECT_EQ(cuda_device_total_bytes("cuda:1"), uint64_t(81559) << 20);
  EXPECT_NE(smi.asked().find("--query-gpu=memory.total"), std::string::npos) << smi.asked();
  EXPECT_NE(smi.asked().find("-i 1"), std::string::npos) << smi.asked();
  EXPECT_EQ(cuda_device_total_bytes("cuda"), uint64_t(81559) << 20);
  EXPECT_NE(smi.asked().find("-i 0"), std::string::npos) << smi.asked();
  EXPECT_EQ(cuda_device_total_bytes("cpu"), std::nullopt);
  EXPECT_EQ(cuda_device_total_bytes("remote"), std::nullopt);
}

TEST(DeviceMemory, CudaVisibleDevicesMapsTheIndex) {
  FakeSmi smi("40960");
  ScopedEnv path("PATH", smi.dir.string());
  ScopedEnv visible("CUDA_VISIBLE_DEVICES", "GPU-5c1f2a,7");
  EXPECT_EQ(cuda_device_total_bytes("cuda:1"), uint64_t(40960) << 20);
  EXPECT_NE(smi.asked().find("-i 7"), std::string::npos) << smi.asked();
  EXPECT_EQ(cuda_device_total_bytes("cuda:0"), uint64_t(40960) << 20);
  EXPECT_NE(smi.asked().find("-i GPU-5c1f2a"), std::string::npos) << smi.asked();
  EXPECT_EQ(cuda_device_total_bytes("cuda:2"), std::nullopt) << "only two devices are visible";
}

TEST(DeviceMemory, AnythingButACleanAnswerIsUnknown) {
  {
    FakeSmi smi("No devices were found", 6);
    ScopedEnv path("PATH", smi.dir.string());
    EXPECT_EQ(cuda_device_total_bytes("cuda:0"), std::nullopt);
  }
  {
    FakeSmi smi("[N/A]");
    ScopedEnv path("PATH", smi.dir.string());
    EXPECT_EQ(cuda_device_total_bytes("cuda:0"), std::nullopt);
  }
  {
    FakeSmi smi("81559");
    ScopedEnv path("PATH", smi.dir.string());
    ScopedEnv visible("CUDA_VISIBLE_DEVICES", "0;touch /tmp/x");
    EXPECT_EQ(cuda_device_total_bytes("cuda:0"), std::nullopt) << "not passed to a shell";
    EXPECT_EQ(smi.asked(), "");
  }
  ScopedEnv path("PATH", "/nonexistent");
  EXPECT_EQ(cuda_device_total_bytes("cuda:0"), std::nullopt);
}
