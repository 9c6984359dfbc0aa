#include "core/hash.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace cudal1 {

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr))
    throw Error(ErrorKind::internal, "OpenSSL could not compute a SHA-256 digest");
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(hex[digest[i] >> 4]);
    out.push_back(hex[digest[i] & 15]);
  }
  return out;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(ErrorKind::input, "cannot read " + path.string(),
                "check that the path exists and is readable");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::filesystem::path& path, const std::string& text, const std::string& hint) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  if (!f.flush()) throw Error(ErrorKind::input, "cannot write " + path.string(), hint);
}

void write_file_durably(const std::filesystem::path& path, const std::string& text, const std::string& hint,
                        unsigned mode) {
  // errno is read first: closing a descriptor on the way out may change it.
  auto fail = [&](const std::string& what, int fd = -1) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    throw Error(ErrorKind::input, "cannot " + what + " " + path.string() + ": " + std::strerror(err), hint);
  };
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  // Unique per writer: two threads storing the same content must not share a temporary file.
  static std::atomic<uint64_t> serial{0};
  std::filesystem::path tmp = path;
  tmp += ".tmp" + std::to_string(getpid()) + "_" + std::to_string(serial++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode_t(mode));
  if (fd < 0) fail("create");
  if (::fchmod(fd, mode_t(mode)) != 0) fail("set the permissions of", fd);
  for (std::size_t done = 0; done < text.size();) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write", fd);
    done += std::size_t(n);
  }
  if (::fsync(fd) != 0) fail("sync", fd);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("rename into");
  const std::string folder = path.has_parent_path() ? path.parent_path().string() : ".";
  int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) fail("open the folder of");
  if (::fsync(dir) != 0) fail("sync the folder of", dir);
  ::close(dir);
}

}  // namespace cudal1
