#include "judge/similarity.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace cudal1::judge {

namespace {

// Words that keep their meaning whatever a candidate calls its own variables: the language's,
// its builtins', and the modules and names a KernelBench file and its hacks are written with.
const std::unordered_set<std::string>& kept_words() {
  static const std::unordered_set<std::string> words = {
      // keywords
      "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
      "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
      "not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
      // builtins
      "id", "len", "range", "enumerate", "zip", "dict", "list", "tuple", "set", "int", "float", "str", "bool", "print",
      "super", "isinstance", "getattr", "setattr", "hasattr", "delattr", "type", "object", "open", "globals", "locals",
      "vars", "exec", "eval", "compile", "iter", "next", "map", "filter", "sorted", "min", "max", "sum", "abs", "any",
      "all", "hash", "memoryview", "bytes", "bytearray", "callable", "staticmethod", "classmethod", "property",
      // modules a candidate imports, for its kernels or for its tricks
      "torch", "nn", "F", "functional", "cuda", "triton", "tl", "os", "sys", "gc", "inspect", "threading",
      "multiprocessing", "ctypes", "time", "weakref", "json", "subprocess", "signal", "atexit", "builtins", "importlib",
      "functools", "itertools", "math", "numpy", "np", "random", "traceback", "load_inline",
      // the names every KernelBench file has
      "self", "Model", "ModelNew", "forward", "get_inputs", "get_init_inputs"};
  return words;
}

bool is_word_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool is_string_prefix(std::string word) {
  std::transform(word.begin(), word.end(), word.begin(), [](unsigned char c) { return std::tolower(c); });
  return word == "r" || word == "b" || word == "u" || word == "f" || word == "rb" || word == "br" || word == "fr" ||
         word == "rf";
}

// Index just past the string literal whose opening quote is at `i`.
std::size_t skip_string(const std::string& s, std::size_t i) {
  char q = s[i];
  bool triple = s.compare(i, 3, std::string(3, q)) == 0;
  std::size_t j = i + (triple ? 3 : 1);
  while (j < s.size()) {
    if (s[j] == '\\') {
      j += 2;
      continue;
    }
    if (triple && s.compare(j, 3, std::string(3, q)) == 0) return j + 3;
    if (!triple && (s[j] == q || s[j] == '\n')) return j + 1;
    ++j;
  }
  return s.size();
}

const char* const kOperators[] = {"**=", "//=", ">>=", "<<=", "**", "//", "==", "!=", "<=", ">=", "->", "+=", "-=",
                                  "*=",  "/=",  "%=",  "@=",  "&=", "|=", "^=", ":=", "<<", ">>"};

uint64_t mix64(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t fnv1a(const std::vector<std::string>& tokens, std::size_t from, std::size_t count) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (std::size_t t = from; t < from + count; ++t) {
    for (unsigned char c : tokens[t]) h = (h ^ c) * 0x100000001b3ull;
    h = (h ^ 0x1f) * 0x100000001b3ull;  // a separator: ("ab", "c") and ("a", "bc") differ
  }
  return h;
}

}  // namespace

std::vector<std::string> normalised_tokens(const std::string& s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c)) || c == '\\') {
      ++i;
    } else if (c == '#') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (c == '"' || c == '\'') {
      i = skip_string(s, i);
      out.push_back("STR");
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      while (i < s.size() && (is_word_char(s[i]) || s[i] == '.' ||
                              ((s[i] == '+' || s[i] == '-') && (s[i - 1] == 'e' || s[i - 1] == 'E'))))
        ++i;
      out.push_back("NUM");
    } else if (is_word_start(c)) {
      std::size_t start = i;
      while (i < s.size() && is_word_char(s[i])) ++i;
      std::string word = s.substr(start, i - start);
      if (i < s.size() && (s[i] == '"' || s[i] == '\'') && is_string_prefix(word)) {
        i = skip_string(s, i);
        out.push_back("STR");
        continue;
      }
      bool attribute = !out.empty() && out.back() == ".";
      bool dunder = word.size() > 4 && word.starts_with("__") && word.ends_with("__");
      out.push_back(attribute || dunder || kept_words().count(word) ? word : "ID");
    } else {
      std::string op(1, c);
      for (const char* o : kOperators)
        if (s.compare(i, std::char_traits<char>::length(o), o) == 0) {
          op = o;
          break;
        }
      i += op.size();
      out.push_back(op);
    }
  }
  return out;
}

Shingles shingles(const std::string& code) {
  std::vector<std::string> tokens = normalised_tokens(code);
  Shingles out;
  std::size_t width = std::min(MinHash::kShingle, tokens.size());
  if (width == 0) return out;
  for (std::size_t t = 0; t + width <= tokens.size(); ++t) out.insert(fnv1a(tokens, t, width));
  return out;
}

Shingles distinctive_shingles(const std::string& code, const std::string& reference) {
  Shingles own = shingles(code);
  if (reference.empty()) return own;
  for (uint64_t s : shingles(reference)) own.erase(s);
  return own;
}

MinHash::MinHash(const Shingles& shingles) {
  if (shingles.empty()) return;  // no signature: similar to nothing
  static const std::vector<uint64_t> seeds = [] {
    std::vector<uint64_t> s(kHashes);
    for (std::size_t k = 0; k < kHashes; ++k) s[k] = mix64(k + 1);
    return s;
  }();
  signature_.assign(kHashes, std::numeric_limits<uint64_t>::max());
  for (uint64_t sh : shingles)
    for (std::size_t k = 0; k < kHashes; ++k) signature_[k] = std::min(signature_[k], mix64(sh ^ seeds[k]));
}

double MinHash::similarity(const MinHash& other) const {
  if (signature_.empty() || other.signature_.empty()) return 0;
  std::size_t equal = 0;
  for (std::size_t k = 0; k < kHashes; ++k) equal += signature_[k] == other.signature_[k];
  return double(equal) / double(kHashes);
}

}  // namespace cudal1::judge
