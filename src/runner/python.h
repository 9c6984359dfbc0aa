// runner/python.h — finding a Python interpreter that can import torch.
#pragma once

#include <string>

namespace cudal1 {

// `requested` if not empty (checked), else $CUDAL1_PYTHON, else the first of `python3` on PATH
// and /usr/bin/python3 that has torch installed. Throws Error(runner) with what to install.
std::string find_python(const std::string& requested = {});

}  // namespace cudal1
