// report/table.h — aligned plain-text tables for the terminal.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/format.h"

namespace cudal1 {

class Table {
 public:
  explicit Table(std::vector<std::string> headers, std::vector<bool> right_aligned = {});
  void add_row(std::vector<std::string> cells);  // missing cells print empty
  void print(std::ostream& os) const;

 private:
  std::vector<std::string> headers_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace cudal1
