// evaluator/fixture_header.h — the header of a red-team fixture file (evaluator/fixture_cases.h
// lists its keys): the leading `# key: value` comment lines, and the code below them. Read by the
// corpus tests and by the judge's import of known hacks (judge/hack_cases.h).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace cudal1 {

struct FixtureHeader {
  std::map<std::string, std::vector<std::string>> values;  // key -> its values, in file order (keys repeat)
  std::string code;                                        // the file below the header
  std::string first(const std::string& key) const;          // "" when the key is absent
};

// The header ends at the first line that is not `# key: value` with a one-word key.
FixtureHeader read_fixture_header(const std::string& text);

}  // namespace cudal1
