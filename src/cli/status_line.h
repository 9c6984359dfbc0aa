// cli/status_line: a long command's live status on stderr. On a terminal one line is redrawn in
// place; into a pipe or a file (a log, a CI job) only the lines the command marks as lasting are
// written, each on its own line, so the log holds no carriage returns and no redraws.
#pragma once

#include <cstdio>
#include <string>

namespace cudal1::cli {

class StatusLine {
 public:
  // `terminal`: redraw in place; by default, whether stderr is a terminal.
  explicit StatusLine(bool terminal);
  StatusLine();
  ~StatusLine();
  // The status now. On a terminal it replaces the line; elsewhere it is written only when lasting.
  void show(const std::string& text, bool lasting);
  // A message of its own line (an error met on the way), the status drawn again below it.
  void note(const std::string& text);
  // Ends the status line on a terminal, so what follows starts on a line of its own.
  void finish();

 private:
  bool terminal_;
  std::string shown_;  // what the terminal's line holds now
};

}  // namespace cudal1::cli
