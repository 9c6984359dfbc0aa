// evaluator/error_shape.h — is an output's error against the float64 oracle rounding, or a
// systematic error (a bias, a wrong constant, a wrong scale)?
//
// Rounding to a shorter mantissa, whatever it rounds (inputs, weights, partial sums, outputs),
// lands on either side of the true value and does not follow the output's values: fitted as
// error = offset + factor x oracle, next to none of it is explained, and its sign is a coin
// toss. A candidate that adds 1.005 where the task adds 1 has an error that is all offset and
// one sign; one that scales by 1.005 has an error that is all factor. Both may fit inside the
// tolerance and sit at a reduced-precision rung's size, but neither is reduced precision: the
// function is wrong, and no option should accept it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "tensors/tensor_file.h"

namespace cudal1 {

struct ErrorShape {
  int64_t elements = 0;          // finite in both and not exactly equal
  double mean = 0, rms = 0;      // of the error, over those elements
  double offset_share = 0;       // share of the error's energy (mean square) that is one constant
  double factor = 0;             // error per unit of the oracle's value, in the fit
  double explained = 0;          // share of the energy the fit offset + factor x oracle explains
  double same_sign_share = 0;    // share of the elements whose error has the commoner sign

  // Too few differing elements to tell rounding from a systematic error.
  bool undecided() const;
  // The error is a bias or a wrong scale, not rounding: a quarter or more of it is explained by
  // the fit, or three elements in four err on the same side.
  bool systematic() const;
  // What was seen, for a person: "97% of it one constant offset of +5e-03, ...".
  std::string describe() const;
  nlohmann::json to_json() const;
};

// The shape of actual - oracle, over elements finite in both; nullopt when the two cannot be
// compared (not float, other shape).
std::optional<ErrorShape> error_shape(const TensorValue& actual, const TensorValue& oracle);

}  // namespace cudal1
