#include "build/split_items.h"

namespace cudal1::split_detail {

namespace {
Item make(Item::Kind kind, std::size_t b, std::size_t e) {
  Item it;
  it.kind = kind;
  it.b = b;
  it.e = e;
  return it;
}
}  // namespace

void Scanner::fail(std::size_t i, const std::string& what) {
  if (problem_.empty())
    problem_ = (i < t_.size() ? "line " + std::to_string(t_[i].line) + ": " : std::string()) + what;
}

std::size_t Scanner::match(std::size_t i) const {
  std::vector<char> want;
  for (std::size_t j = i; j < t_.size(); ++j) {
    if (t_[j].kind != TokKind::punct) continue;
    char c = t_[j].text[0];
    if (t_[j].text.size() != 1) continue;
    if (c == '(') want.push_back(')');
    else if (c == '[') want.push_back(']');
    else if (c == '{') want.push_back('}');
    else if (c == ')' || c == ']' || c == '}') {
      if (want.empty() || want.back() != c) return npos;
      want.pop_back();
      if (want.empty()) return j;
    }
  }
  return npos;
}

std::size_t Scanner::skip_angles(std::size_t i) const {
  int depth = 0;
  for (std::size_t j = i; j < t_.size(); ++j) {
    const Token& k = t_[j];
    if (k.kind != TokKind::punct) continue;
    if (k.is("(") || k.is("[") || k.is("{")) {
      j = match(j);
      if (j == npos) return npos;
    } else if (k.is("<")) {
      ++depth;
    } else if (k.is(">") || k.is(">>>")) {
      depth -= static_cast<int>(k.text.size());
      if (depth <= 0) return depth == 0 ? j + 1 : npos;
    } else if (k.is(";") || k.is("}")) {
      return npos;
    }
  }
  return npos;
}

// The end (one past) of the declaration starting at i: its ';', or the '}' of a function body.
std::size_t Scanner::decl_end(std::size_t i, std::size_t e) {
  std::size_t j = i;
  while (j + 1 < e && t_[j].is("template") && t_[j + 1].is("<")) {
    j = skip_angles(j + 1);
    if (j == npos || j >= e) {
      fail(i, "a template parameter list without an end");
      return npos;
    }
  }
  bool initializer = false, class_like = false;
  for (; j < e; ++j) {
    const Token& k = t_[j];
    if (k.kind == TokKind::directive) {
      fail(j, "a preprocessor directive inside a declaration");
      return npos;
    }
    if (k.kind == TokKind::ident && (k.is("struct") || k.is("class") || k.is("union") || k.is("enum")))
      class_like = true;
    if (k.is("=") && !(j > i && t_[j - 1].is("operator"))) initializer = true;
    if (k.is(";")) return j + 1;
    if (k.is("(") || k.is("[") || k.is("{")) {
      std::size_t close = match(j);
      if (close == npos || close >= e) {
        fail(j, "an unbalanced bracket");
        return npos;
      }
      if (k.is("{") && !initializer && !class_like) return close + 1;  // a function body
      j = close;
    } else if (k.is(")") || k.is("]") || k.is("}")) {
      fail(j, "an unbalanced bracket");
      return npos;
    }
  }
  fail(i, "a declaration without an end");
  return npos;
}

std::vector<Item> Scanner::items(std::size_t b, std::size_t e) {
  std::vector<Item> out;
  std::size_t i = b;
  while (i < e && problem_.empty()) {
    const Token& k = t_[i];
    if (k.kind == TokKind::directive) {
      out.push_back(make(Item::Kind::directive, i, i + 1));
      ++i;
      continue;
    }
    std::size_t ns = k.is("inline") && i + 1 < e && t_[i + 1].is("namespace") ? i + 1 : i;
    bool linkage = k.is("extern") && i + 2 < e && t_[i + 1].kind == TokKind::literal && t_[i + 2].is("{");
    if (t_[ns].is("namespace") || linkage) {
      std::size_t open = linkage ? i + 2 : ns + 1;
      while (open < e && !t_[open].is("{") && !t_[open].is(";") && !t_[open].is("=")) ++open;
      if (open < e && t_[open].is("{")) {
        std::size_t close = match(open);
        if (close == npos || close >= e) {
          fail(open, "an unbalanced namespace");
          break;
        }
        Item blk = make(Item::Kind::block, i, close + 1);
        blk.open = open;
        blk.anonymous = !linkage && open == ns + 1;
        blk.children = items(open + 1, close);
        out.push_back(std::move(blk));
        i = close + 1;
        continue;
      }
    }
    std::size_t end = decl_end(i, e);
    if (end == npos) break;
    out.push_back(make(Item::Kind::decl, i, end));
    i = end;
  }
  return out;
}

std::vector<std::pair<std::size_t, std::size_t>> split_commas(const std::vector<Token>& t, std::size_t b,
                                                              std::size_t e, bool angles) {
  std::vector<std::pair<std::size_t, std::size_t>> parts;
  int depth = 0;
  std::size_t start = b;
  for (std::size_t j = b; j < e; ++j) {
    const Token& k = t[j];
    if (k.kind != TokKind::punct) continue;
    if (k.is("(") || k.is("[") || k.is("{") || (angles && k.is("<"))) ++depth;
    else if (k.is(")") || k.is("]") || k.is("}") || (angles && k.is(">"))) --depth;
    else if (angles && k.is(">>>")) depth -= 3;
    else if (k.is(",") && depth == 0) {
      parts.emplace_back(start, j);
      start = j + 1;
    }
  }
  if (start < e || !parts.empty()) parts.emplace_back(start, e);
  return parts;
}

}  // namespace cudal1::split_detail
