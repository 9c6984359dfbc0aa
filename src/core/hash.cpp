#include "core/hash.h"

#include <openssl/evp.h>

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

}  // namespace cudal1
