// evaluator/extension_folder.h — a candidate's kept extension-build folder, and who is using it.
//
// load_inline guards each build folder with a `lock` file that PyTorch creates and deletes
// itself; an evaluation killed mid-build leaves it behind, and every later load of the same
// candidate then waits on it until the load timeout. Evaluations sharing a folder each hold a
// shared flock on "<folder>.users" (beside the folder, out of the candidate's sight) while their
// candidate may run; one that finds no other holder removes the build locks left one level down
// in the folder (<folder>/<extension>/lock) before its candidate starts. A lock a live
// evaluation's build holds is never touched.
#pragma once

#include <filesystem>

namespace cudal1 {

class ExtensionFolderClaim {
 public:
  ExtensionFolderClaim() = default;  // claims nothing
  // Creates `folder` when missing and claims it; blocks only while another claimant clears it.
  // Throws Error(runner) when the folder or its ".users" file cannot be made.
  explicit ExtensionFolderClaim(const std::filesystem::path& folder);
  ~ExtensionFolderClaim();
  ExtensionFolderClaim(ExtensionFolderClaim&& other) noexcept;
  ExtensionFolderClaim& operator=(ExtensionFolderClaim&& other) noexcept;
  ExtensionFolderClaim(const ExtensionFolderClaim&) = delete;
  ExtensionFolderClaim& operator=(const ExtensionFolderClaim&) = delete;

  // How many stale build locks this claim removed (0 when another evaluation held the folder).
  int stale_locks_removed() const { return removed_; }

 private:
  int fd_ = -1;
  int removed_ = 0;
};

}  // namespace cudal1
