#include "core/error.h"

namespace cudal1 {

Error::Error(ErrorKind kind, std::string message, std::string hint, std::string context)
    : std::runtime_error(message), kind_(kind), message_(std::move(message)),
      hint_(std::move(hint)), context_(std::move(context)) {}

std::string Error::describe() const {
  std::string s = std::string(error_kind_name(kind_)) + " error: " + message_;
  if (!context_.empty()) s += " [" + context_ + "]";
  if (!hint_.empty()) s += "\n  hint: " + hint_;
  return s;
}

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::usage: return "usage";
    case ErrorKind::input: return "input";
    case ErrorKind::task: return "task";
    case ErrorKind::runner: return "runner";
    case ErrorKind::store: return "store";
    case ErrorKind::connection: return "connection";
    case ErrorKind::internal: return "internal";
  }
  return "unknown";
}

int error_exit_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::usage: return 2;
    case ErrorKind::input: return 3;
    case ErrorKind::task: return 4;
    case ErrorKind::runner: return 5;
    case ErrorKind::store: return 6;
    case ErrorKind::connection: return 7;
    case ErrorKind::internal: return 70;
  }
  return 70;
}

}  // namespace cudal1
