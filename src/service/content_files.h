// service/content_files.h — the folder where the reward service keeps the task and candidate
// files of jobs, each named by the SHA-256 of its content. A file there is only trusted while its
// content still matches its name: candidate code runs on the same machine, and one that managed
// to change a reference file would be judged against a task of its own making.
#pragma once

#include <filesystem>
#include <string>

namespace cudal1::service {

class ContentFiles {
 public:
  // Makes the folder, and takes away group's and others' write permission on it. Throws
  // Error(usage) when it cannot.
  explicit ContentFiles(std::filesystem::path folder);

  // The path of the file holding `text`: written under a temporary name, synced and renamed into
  // place, read-only (0444), before the job row that names it is written. A file already there
  // whose content does not match its name is written again, and the service says so on stderr.
  std::string put(const std::string& text) const;

  // The content of a job's file. A file of this folder whose content no longer matches its name
  // throws Error(input): the job fails instead of evaluating something else.
  std::string read(const std::filesystem::path& file) const;

 private:
  std::filesystem::path folder_;
};

}  // namespace cudal1::service
