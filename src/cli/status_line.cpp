// cli/status_line.cpp — see status_line.h.
#include "cli/status_line.h"

#include <unistd.h>

namespace cudal1::cli {

namespace {
// Back to the line's start and clear it: a shorter status leaves nothing of a longer one.
constexpr const char* kClear = "\r\033[K";
}  // namespace

StatusLine::StatusLine(bool terminal) : terminal_(terminal) {}
StatusLine::StatusLine() : StatusLine(isatty(STDERR_FILENO) == 1) {}
StatusLine::~StatusLine() { finish(); }

void StatusLine::show(const std::string& text, bool lasting) {
  if (terminal_) {
    std::fprintf(stderr, "%s%s", kClear, text.c_str());
    shown_ = text;
  } else if (lasting) {
    std::fprintf(stderr, "%s\n", text.c_str());
  }
  std::fflush(stderr);
}

void StatusLine::note(const std::string& text) {
  if (terminal_) {
    std::fprintf(stderr, "%s%s\n%s", kClear, text.c_str(), shown_.c_str());
  } else {
    std::fprintf(stderr, "%s\n", text.c_str());
  }
  std::fflush(stderr);
}

void StatusLine::finish() {
  if (terminal_ && !shown_.empty()) std::fprintf(stderr, "\n");
  shown_.clear();
  std::fflush(stderr);
}

}  // namespace cudal1::cli
