// service/content_files.cpp — see content_files.h.
#include "service/content_files.h"

#include <iostream>

#include "core/error.h"
#include "core/hash.h"

namespace fs = std::filesystem;

namespace cudal1::service {

namespace {

constexpr fs::perms kReadOnly = fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read;

}  // namespace

ContentFiles::ContentFiles(fs::path folder) : folder_(std::move(folder)) {
  fs::create_directories(folder_);
  std::error_code ec;
  fs::permissions(folder_, fs::perms::group_write | fs::perms::others_write, fs::perm_options::remove, ec);
  if (ec)
    throw Error(ErrorKind::usage, "cannot make " + folder_.string() + " unwritable by other users: " + ec.message(),
                "pass a --work folder that this user owns");
}

std::string ContentFiles::put(const std::string& text) const {
  const std::string hash = sha256_hex(text);
  const fs::path file = folder_ / (hash + ".py");
  std::error_code ec;
  if (fs::exists(file, ec)) {
    std::string there;
    try {
      there = read_file(file);
    } catch (const Error&) {
      // unreadable: written again below
    }
    if (sha256_hex(there) == hash) {
      if (fs::status(file, ec).permissions() != kReadOnly) fs::permissions(file, kReadOnly, ec);
      return file.string();
    }
    std::cerr << "cudal1 serve: " << file.string() << " no longer held the content its name is the hash of "
              << "(something changed it after the service wrote it); written again" << std::endl;
  }
  write_file_durably(file, text, "check that the service's --work folder is writable", 0444);
  return file.string();
}

std::string ContentFiles::read(const fs::path& file) const {
  std::string text = read_file(file);
  if (file.parent_path() == folder_ && file.extension() == ".py" && file.stem().string() != sha256_hex(text))
    throw Error(ErrorKind::input, "the job's file " + file.string() + " changed after the service stored it",
                "submit the job again; if this repeats, something on this machine writes into the service's --work "
                "folder (see the trust model in docs/serve.md)");
  return text;
}

}  // namespace cudal1::service
