// core/expect_error.h — for tests only: run code that must fail with a cudal1::Error and get the
// error back, so a test checks its kind and message without a try/catch of its own.
#pragma once

#include <gtest/gtest.h>

#include "core/error.h"

namespace cudal1::test_support {

// Runs `f` and returns the cudal1::Error it throws (fails the test if it throws none).
template <typename F>
Error expect_error(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected a cudal1::Error";
  return Error(ErrorKind::internal, "no error thrown");
}

}  // namespace cudal1::test_support
