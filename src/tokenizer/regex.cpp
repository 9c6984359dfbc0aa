#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace cudal1::tokenizer {

struct Regex::Code {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Code() { pcre2_code_free(code); }
};

namespace {

// JIT matching runs on its own stack; PCRE2's default 32 KiB can run out on long runs of
// whitespace under `\s+(?!\S)`. One per thread, grown up to 8 MiB; past that we fall back to the
// interpreter rather than fail.
struct JitContext {
  pcre2_jit_stack* stack = nullptr;
  pcre2_match_context* context = nullptr;
  JitContext() {
    stack = pcre2_jit_stack_create(64 * 1024, 8 * 1024 * 1024, nullptr);
    context = pcre2_match_context_create(nullptr);
    if (stack && context) pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~JitContext() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
  }
};

pcre2_match_context* thread_match_context() {
  thread_local JitContext ctx;
  return ctx.context;
}

struct MatchData {
  pcre2_match_data* data;
  explicit MatchData(const pcre2_code* code) : data(pcre2_match_data_create_from_pattern(code, nullptr)) {}
  ~MatchData() { pcre2_match_data_free(data); }
};

// One pcre2_match: >0 matched, 0 / PCRE2_ERROR_NOMATCH none; errors other than running out of
// JIT stack are bugs in the pattern or input and throw.
int match_once(const pcre2_code* code, bool jit, std::string_view text, std::size_t start, uint32_t options,
               pcre2_match_data* md, const std::string& pattern) {
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  int rc = pcre2_match(code, subject, text.size(), start, options | PCRE2_NO_UTF_CHECK, md,
                       jit ? thread_match_context() : nullptr);
  if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
    rc = pcre2_match(code, subject, text.size(), start, options | PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, nullptr);
  }
  if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(rc, buf, sizeof buf);
    throw Error(ErrorKind::internal, "regex match failed: " + std::string(reinterpret_cast<char*>(buf)), {}, pattern);
  }
  return rc;
}

// The Unicode White_Space property, which is what Oniguruma's \s matches. PCRE2's \s also takes
// U+180E (MONGOLIAN VOWEL SEPARATOR, a space before Unicode 6.3), so HF and we would cut text
// holding it differently; spelling the set out removes the difference.
constexpr const char* kWhiteSpaceItems = R"(\t-\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

}  // namespace

std::string oniguruma_compatible(const std::string& p) {
  std::string out;
  out.reserve(p.size() + 64);
  bool in_class = false;
  std::size_t class_start = 0;  // index just past "[" or "[^": a "]" there is a literal
  for (std::size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char e = p[i + 1];
      if (e == 'Q') {  // \Q...\E is literal text: copy it untouched
        std::size_t end = p.find("\\E", i + 2);
        std::size_t stop = end == std::string::npos ? p.size() : end + 2;
        out.append(p, i, stop - i);
        i = stop - 1;
        continue;
      }
      if (e == 's') {
        out += in_class ? std::string(kWhiteSpaceItems) : "[" + std::string(kWhiteSpaceItems) + "]";
      } else if (e == 'S' && !in_class) {
        out += "[^" + std::string(kWhiteSpaceItems) + "]";
      } else {
        out += c;  // any other escape (\S inside a class included) is PCRE2's own
        out += e;
      }
      ++i;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      class_start = i + 1;
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {  // [:alpha:]
      std::size_t end = p.find(":]", i + 2);
      std::size_t stop = end == std::string::npos ? i + 1 : end + 2;
      out.append(p, i, stop - i);
      i = stop - 1;
      continue;
    }
    if (in_class && c == ']' && i != class_start) in_class = false;
    out += c;
  }
  return out;
}

Regex::Regex(const std::string& pattern, const std::string& what) : pattern_(pattern), code_(std::make_shared<Code>()) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  std::string compiled = oniguruma_compatible(pattern);
  code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(compiled.data()), compiled.size(), PCRE2_UTF | PCRE2_UCP,
                              &err, &offset, nullptr);
  if (!code_->code) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(err, buf, sizeof buf);
    throw Error(ErrorKind::input,
                what + " does not compile: " + std::string(reinterpret_cast<char*>(buf)) + " at offset " +
                    std::to_string(offset),
                "the pattern must be a Perl/Oniguruma-style regular expression", pattern);
  }
  // JIT is an optimisation: where it is unavailable (no JIT support built in, W^X memory
  // policies) the interpreter gives the same matches.
  code_->jit = pcre2_jit_compile(code_->code, PCRE2_JIT_COMPLETE) == 0;
}

std::vector<std::pair<std::size_t, std::size_t>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  MatchData md(code_->code);
  std::size_t pos = 0;
  while (pos <= text.size()) {
    int rc = match_once(code_->code, code_->jit, text, pos, 0, md.data, pattern_);
    if (rc <= 0) break;
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.data);
    std::size_t b = ov[0], e = ov[1];
    out.emplace_back(b, e);
    if (e > b) {
      pos = e;
    } else {
      if (b >= text.size()) break;
      char32_t cp;
      pos = b + utf8_decode(text, b, cp);
    }
  }
  return out;
}

bool Regex::matches_at(std::string_view text, std::size_t pos) const {
  MatchData md(code_->code);
  return match_once(code_->code, code_->jit, text, pos, PCRE2_ANCHORED, md.data, pattern_) > 0;
}

bool is_word_char(char32_t cp) {
  if (cp < 0x80) return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || cp == '_';
  static const Regex word(R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D}])", "word-character class");
  std::string s;
  utf8_append(s, cp);
  return word.matches_at(s, 0);
}

}  // namespace cudal1::tokenizer
