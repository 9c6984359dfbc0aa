#include "core/encoding.h"

#include <openssl/evp.h>

#include "core/error.h"

namespace cudal1 {

std::vector<uint8_t> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) throw Error(ErrorKind::runner, "malformed base64 from a worker (length not a multiple of 4)");
  std::vector<uint8_t> out(text.size() / 4 * 3);
  if (text.empty()) return out;
  int n = EVP_DecodeBlock(out.data(), reinterpret_cast<const unsigned char*>(text.data()), int(text.size()));
  if (n < 0) throw Error(ErrorKind::runner, "malformed base64 from a worker");
  std::size_t pad = (text.back() == '=') + (text.size() > 1 && text[text.size() - 2] == '=');
  out.resize(std::size_t(n) - pad);
  return out;
}

}  // namespace cudal1
