// store/seal.cpp — the keyed seal on cudal1's rows and its key file (see seal.h).
#include "store/seal.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>

#include "core/error.h"

namespace fs = std::filesystem;

namespace cudal1 {

namespace {

std::string octal_mode(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", unsigned(mode & 07777));
  return buf;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Whether the key was there; throws when it is there but cannot be trusted or read.
bool read_key(const fs::path& path, std::array<unsigned char, 32>& key) {
  Fd f{::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)};
  if (f.fd < 0) {
    if (errno == ENOENT) return false;
    throw Error(ErrorKind::store, "cannot open the seal key " + path.string() + ": " + std::strerror(errno),
                "it must be a regular file (not a link) its owner can read: chmod 600 " + path.string());
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw Error(ErrorKind::store, "the seal key " + path.string() + " is not a regular file",
                "move it away: cudal1 makes a new key, and rows sealed with the old one are evaluated again");
  if (st.st_mode & 077)
    throw Error(ErrorKind::store,
                "the seal key " + path.string() + " is open to group or others (mode " + octal_mode(st.st_mode) +
                    "): whoever reads it can forge the rows of the database beside it",
                "chmod 600 " + path.string() + "; if someone else may have read it, move it away instead (a new key is "
                "made, and rows sealed with the old one are evaluated again)");
  if (st.st_uid != ::geteuid())
    throw Error(ErrorKind::store,
                "the seal key " + path.string() + " belongs to uid " + std::to_string(st.st_uid) + ", not to this user (uid " +
                    std::to_string(::geteuid()) + ")",
                "run cudal1 as the key's owner, or chown the key (and its database) to this user");
  ssize_t n = ::read(f.fd, key.data(), key.size());
  char extra;
  if (n != ssize_t(key.size()) || ::read(f.fd, &extra, 1) != 0)
    throw Error(ErrorKind::store, "the seal key " + path.string() + " is not 32 bytes: it is damaged",
                "move it away: cudal1 makes a new key, and rows sealed with the old one are evaluated again");
  return true;
}

// Writes a fresh key to a private temporary file and links it into place: link() never replaces,
// so when another process got there first its key stands and ours is dropped.
void create_key(const fs::path& path) {
  std::string tmp = path.string() + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}());
  auto fail = [&](const std::string& what) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw Error(ErrorKind::store, what + " the seal key " + path.string() + ": " + std::strerror(e),
                "check that " + path.parent_path().string() + " is a writable folder on a local disk");
  };
  std::array<unsigned char, 32> key{};
  if (RAND_bytes(key.data(), int(key.size())) != 1)
    throw Error(ErrorKind::internal, "OpenSSL could not draw random bytes for a seal key");
  {
    Fd f{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)};
    if (f.fd < 0) fail("cannot create");
    if (::fchmod(f.fd, 0600) != 0) fail("cannot restrict");  // a umask can only narrow it, but be sure
    if (::write(f.fd, key.data(), key.size()) != ssize_t(key.size())) fail("cannot write");
    if (::fsync(f.fd) != 0) fail("cannot sync");
  }
  if (::link(tmp.c_str(), path.c_str()) != 0 && errno != EEXIST) fail("cannot put in place");
  ::unlink(tmp.c_str());
  Fd dir{::open(path.parent_path().empty() ? "." : path.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (dir.fd >= 0) ::fsync(dir.fd);  // the link survives a power cut
}

std::string hex(const unsigned char* data, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(digits[data[i] >> 4]);
    out.push_back(digits[data[i] & 15]);
  }
  return out;
}

void append_field(std::string& out, std::string_view field) {
  uint64_t n = field.size();
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(char((n >> shift) & 0xff));
  out.append(field);
}

}  // namespace

fs::path Sealer::key_path(const fs::path& database) { return database.string() + ".key"; }

Sealer::Sealer(const fs::path& database) : key_path_(key_path(database)) {
  if (read_key(key_path_, key_)) return;
  create_key(key_path_);
  if (!read_key(key_path_, key_))
    throw Error(ErrorKind::store, "the seal key " + key_path_.string() + " vanished as it was made",
                "something else is removing files beside the database: stop it, then run again");
}

std::string Sealer::seal(std::string_view domain, const std::vector<std::string_view>& fields) const {
  std::string message;
  append_field(message, domain);
  for (auto f : fields) append_field(message, f);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), key_.data(), int(key_.size()), reinterpret_cast<const unsigned char*>(message.data()),
            message.size(), mac, &len))
    throw Error(ErrorKind::internal, "OpenSSL could not compute an HMAC-SHA256 seal");
  return hex(mac, len);
}

bool Sealer::verify(std::string_view seal_hex, std::string_view domain,
                    const std::vector<std::string_view>& fields) const {
  std::string expected = seal(domain, fields);
  return seal_hex.size() == expected.size() && CRYPTO_memcmp(seal_hex.data(), expected.data(), expected.size()) == 0;
}

void create_private_file(const fs::path& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::fchmod(fd, 0600);
    ::close(fd);
  }
  // EEXIST: the file is there already (its mode is its owner's business); any other failure is
  // reported by SQLite's own open, with the caller's hint.
}

void SealAlarm::raise(std::size_t rows) {
  if (rows == 0) return;
  if (count_ == 0)
    std::cerr << label_ << ": ignored " << rows << " row" << (rows == 1 ? "" : "s")
              << " whose seal does not match (written outside cudal1?)\n  hint: " << hint_ << std::endl;
  count_ += rows;
}

}  // namespace cudal1
