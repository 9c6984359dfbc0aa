// core/error.h — the one error type cudal1 throws when it cannot do what was asked.
//
// Verdicts about candidates are results, not errors; an Error means the tool itself could not
// run (bad arguments, a task file it cannot load, a broken store). Each carries a category (which
// decides the exit status), the context it happened in, and a hint written for the person who
// hits it.
#pragma once

#include <stdexcept>
#include <string>

namespace cudal1 {

enum class ErrorKind {
  usage,     // bad command-line arguments or options
  input,     // a file the user named is missing or unreadable
  task,      // the task file cannot be loaded as a KernelBench task
  runner,    // a worker process could not be started or broke the protocol
  store,     // the SQLite store could not be opened or written
  connection,  // a server cudal1 talks to (Redis) cannot be reached, or refuses it
  internal,  // a bug in cudal1
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string message, std::string hint = {}, std::string context = {});

  ErrorKind kind() const { return kind_; }
  const std::string& message() const { return message_; }
  const std::string& hint() const { return hint_; }
  const std::string& context() const { return context_; }

  // "task error: <message> [<context>]\n  hint: <hint>"
  std::string describe() const;

 private:
  ErrorKind kind_;
  std::string message_, hint_, context_;
};

const char* error_kind_name(ErrorKind kind);

// Exit status of the CLI for each category: 2 usage, 3 input, 4 task, 5 runner, 6 store, 7 connection,
// 70 internal.
int error_exit_code(ErrorKind kind);

}  // namespace cudal1
