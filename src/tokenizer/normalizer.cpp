#include "tokenizer/normalizer.h"

#include <nlohmann/json.hpp>

#include "core/error.h"

#ifdef CUDAL1_TOKENIZER_HAVE_ICU
#include <unicode/unorm2.h>
#include <unicode/ustring.h>
#endif

namespace cudal1::tokenizer {

namespace {

#ifdef CUDAL1_TOKENIZER_HAVE_ICU
std::string icu_nfc(std::string_view text) {
  UErrorCode status = U_ZERO_ERROR;
  const UNormalizer2* nfc = unorm2_getNFCInstance(&status);
  if (U_FAILURE(status)) throw Error(ErrorKind::internal, std::string("ICU NFC unavailable: ") + u_errorName(status));
  // UTF-8 -> UTF-16 (ICU's normaliser works on UTF-16), normalise, and back.
  int32_t n16 = 0;
  status = U_ZERO_ERROR;
  u_strFromUTF8(nullptr, 0, &n16, text.data(), static_cast<int32_t>(text.size()), &status);
  std::u16string in(static_cast<std::size_t>(n16), u'\0');
  status = U_ZERO_ERROR;
  u_strFromUTF8(reinterpret_cast<UChar*>(in.data()), n16, nullptr, text.data(), static_cast<int32_t>(text.size()), &status);
  if (U_FAILURE(status)) throw Error(ErrorKind::internal, std::string("UTF-8 to UTF-16 failed: ") + u_errorName(status));
  auto src = reinterpret_cast<const UChar*>(in.data());
  status = U_ZERO_ERROR;
  if (unorm2_isNormalized(nfc, src, n16, &status) && U_SUCCESS(status)) return std::string(text);
  std::u16string out(static_cast<std::size_t>(n16) * 3 + 16, u'\0');
  status = U_ZERO_ERROR;
  int32_t nout = unorm2_normalize(nfc, src, n16, reinterpret_cast<UChar*>(out.data()), static_cast<int32_t>(out.size()), &status);
  if (status == U_BUFFER_OVERFLOW_ERROR) {
    out.assign(static_cast<std::size_t>(nout), u'\0');
    status = U_ZERO_ERROR;
    nout = unorm2_normalize(nfc, src, n16, reinterpret_cast<UChar*>(out.data()), nout, &status);
  }
  if (U_FAILURE(status)) throw Error(ErrorKind::internal, std::string("NFC failed: ") + u_errorName(status));
  std::string result;
  int32_t n8 = 0;
  status = U_ZERO_ERROR;
  u_strToUTF8(nullptr, 0, &n8, reinterpret_cast<const UChar*>(out.data()), nout, &status);
  result.assign(static_cast<std::size_t>(n8), '\0');
  status = U_ZERO_ERROR;
  u_strToUTF8(result.data(), n8, nullptr, reinterpret_cast<const UChar*>(out.data()), nout, &status);
  if (U_FAILURE(status)) throw Error(ErrorKind::internal, std::string("UTF-16 to UTF-8 failed: ") + u_errorName(status));
  return result;
}
#endif

Error unsupported(const std::string& what, const std::string& context) {
  return Error(ErrorKind::input, "unsupported normalizer: " + what,
               "supported: \"normalizer\": null or {\"type\": \"NFC\"} (what Qwen2 and Llama-3 ship)", context);
}

}  // namespace

Normalizer::Normalizer(Kind kind) : kind_(kind) {}

bool Normalizer::nfc_available() {
#ifdef CUDAL1_TOKENIZER_HAVE_ICU
  return true;
#else
  return false;
#endif
}

Normalizer Normalizer::from_json(const nlohmann::json& j, const std::string& context) {
  if (j.is_null()) return Normalizer();
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) throw unsupported(j.dump(), context);
  std::string type = j["type"].get<std::string>();
  Kind kind = Kind::none;
  if (type == "NFC") {
    kind = Kind::nfc;
  } else if (type == "Sequence" && j.contains("normalizers") && j["normalizers"].is_array()) {
    for (const auto& item : j["normalizers"]) {
      Normalizer n = from_json(item, context);
      if (n.kind_ == Kind::nfc) kind = Kind::nfc;  // NFC is idempotent: several are one
    }
  } else {
    throw unsupported("type \"" + type + "\"", context);
  }
  if (kind == Kind::nfc && !nfc_available()) {
    throw Error(ErrorKind::input, "this tokenizer needs NFC normalisation, and this build has no ICU",
                "rebuild with Debian's libicu-dev installed (pkg-config icu-uc)", context);
  }
  return Normalizer(kind);
}

std::string Normalizer::apply(std::string_view text) const {
  if (kind_ == Kind::none) return std::string(text);
  // ASCII is already NFC, and it is nearly all of the code this project tokenizes.
  bool ascii = true;
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) {
      ascii = false;
      break;
    }
  }
  if (ascii) return std::string(text);
#ifdef CUDAL1_TOKENIZER_HAVE_ICU
  return icu_nfc(text);
#else
  throw Error(ErrorKind::internal, "NFC requested in a build without ICU");
#endif
}

}  // namespace cudal1::tokenizer
