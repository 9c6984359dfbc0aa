#include <gtest/gtest.h>

#include <string>

#include "core/text.h"

using cudal1::first_line;
using cudal1::utf8_prefix;

TEST(Text, FirstLineStopsAtTheFirstBreak) {
  EXPECT_EQ(first_line("case 0: RuntimeError: boom\nTraceback ...\n  raise x"), "case 0: RuntimeError: boom");
  EXPECT_EQ(first_line("one line"), "one line");
  EXPECT_EQ(first_line("crlf\r\nnext"), "crlf");
  EXPECT_EQ(first_line("\nafter an empty first line"), "");
  EXPECT_EQ(first_line(""), "");
}

TEST(Text, Utf8PrefixNeverSplitsACharacter) {
  const std::string quoted = "error: \u2018forward\u2019 was not declared";  // each quote is 3 bytes
  EXPECT_EQ(utf8_prefix(quoted, 100), quoted);
  EXPECT_EQ(utf8_prefix(quoted, 7), "error: ");
  EXPECT_EQ(utf8_prefix(quoted, 8), "error: ");   // inside the opening quote
  EXPECT_EQ(utf8_prefix(quoted, 9), "error: ");
  EXPECT_EQ(utf8_prefix(quoted, 10), "error: \u2018");
  EXPECT_EQ(utf8_prefix("", 3), "");
}

TEST(Text, PythonExceptionLineIsTheLastTracebacksException) {
  using cudal1::python_exception_line;
  const std::string oom =
      "Traceback (most recent call last):\n"
      "  File \"/w/cudal1_worker.py\", line 146, in <module>\n"
      "    main()\n"
      "    ^^^^^^\n"
      "  File \"/w/roles.py\", line 102, in __init__\n"
      "    torch.cuda.set_device(self.device)\n"
      "torch.AcceleratorError: CUDA error: out of memory\r\n"
      "Search for `cudaErrorMemoryAllocation' in https://docs.nvidia.com/cuda/ for more information.\n"
      "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n";
  EXPECT_EQ(python_exception_line(oom), "torch.AcceleratorError: CUDA error: out of memory");
  const std::string chained =
      "warming up\nTraceback (most recent call last):\n  File \"a.py\", line 1, in <module>\nKeyError: 'x'\n\n"
      "During handling of the above exception, another exception occurred:\n\n"
      "Traceback (most recent call last):\n  File \"a.py\", line 3, in <module>\nValueError: no weights\nsecond line\n";
  EXPECT_EQ(python_exception_line(chained), "ValueError: no weights");
  EXPECT_EQ(python_exception_line("no traceback here\nRuntimeError: looks like one\n"), "");
  // Cut off before its exception (a bounded tail of the stream): nothing to quote.
  EXPECT_EQ(python_exception_line("Traceback (most recent call last):\n  File \"a.py\", line 1\n"), "");
  // The words inside a line are no traceback's header.
  EXPECT_EQ(python_exception_line("print('Traceback (most recent call last):')\nOSError: x\n"), "");
}

TEST(Text, PythonExceptionLineIsBounded) {
  const std::string endless = "Traceback (most recent call last):\nRuntimeError: " + std::string(100000, 'x') + "\n";
  EXPECT_EQ(cudal1::python_exception_line(endless).size(), 300u);
  EXPECT_EQ(cudal1::python_exception_line(endless, 20), "RuntimeError: xxxxxx");
}
