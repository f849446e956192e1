// SPDX-License-Identifier: Apache-2.0
#include "src/cel/lexer.h"

#include <algorithm>

namespace gpusched::cel {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || IsDigit(c); }
int HexValue(char c) {
  if (IsDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

}  // namespace

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

void Lexer::SkipSpaceAndComments() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
      ++pos_;
    } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') {
      while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    } else {
      return;
    }
  }
}

Token Lexer::Next() {
  SkipSpaceAndComments();
  Token t;
  t.pos = static_cast<int32_t>(pos_);
  if (pos_ >= text_.size()) return t;
  char c = text_[pos_];
  char n1 = pos_ + 1 < text_.size() ? text_[pos_ + 1] : '\0';
  if (IsDigit(c) || (c == '.' && IsDigit(n1))) return Number();
  if (c == '"' || c == '\'') return StringLiteral(0, false, false);
  if (c == '`') {
    size_t end = text_.find('`', pos_ + 1);
    std::string_view inner =
        end == std::string_view::npos ? std::string_view() : text_.substr(pos_ + 1, end - pos_ - 1);
    bool ok = !inner.empty() && std::all_of(inner.begin(), inner.end(), [](char ch) {
      return IsIdentChar(ch) || ch == '.' || ch == '-' || ch == '/' || ch == ' ';
    });
    if (!ok) {
      t.kind = TokenKind::kError;
      t.decoded = "invalid quoted field name";
      pos_ = end == std::string_view::npos ? text_.size() : end + 1;
      return t;
    }
    t.kind = TokenKind::kIdent;
    t.text = inner;
    t.quoted = true;
    pos_ = end + 1;
    return t;
  }
  if (IsIdentStart(c)) {
    // String prefixes: r, b, rb, br in either case.
    size_t p = pos_;
    bool raw = false;
    bool bytes = false;
    while (p < text_.size() && p - pos_ < 2) {
      char l = static_cast<char>(text_[p] | 0x20);
      if (l == 'r' && !raw) {
        raw = true;
      } else if (l == 'b' && !bytes) {
        bytes = true;
      } else {
        break;
      }
      ++p;
    }
    if ((raw || bytes) && p < text_.size() && (text_[p] == '"' || text_[p] == '\'')) {
      return StringLiteral(p - pos_, raw, bytes);
    }
    size_t start = pos_;
    while (pos_ < text_.size() && IsIdentChar(text_[pos_])) ++pos_;
    t.kind = TokenKind::kIdent;
    t.text = text_.substr(start, pos_ - start);
    return t;
  }
  static constexpr std::string_view kTwo[] = {"==", "!=", "<=", ">=", "&&", "||"};
  for (std::string_view op : kTwo) {
    if (text_.substr(pos_, 2) == op) {
      t.kind = TokenKind::kOp;
      t.text = text_.substr(pos_, 2);
      pos_ += 2;
      return t;
    }
  }
  if (std::string_view("+-*/%<>!?:.,()[]{}").find(c) != std::string_view::npos) {
    t.kind = TokenKind::kOp;
    t.text = text_.substr(pos_, 1);
    ++pos_;
    return t;
  }
  t.kind = TokenKind::kError;
  t.decoded = "token recognition error at: '" + std::string(1, c) + "'";
  ++pos_;
  return t;
}

Token Lexer::Number() {
  Token t;
  t.pos = static_cast<int32_t>(pos_);
  size_t start = pos_;
  if (text_[pos_] == '0' && pos_ + 1 < text_.size() && (text_[pos_ + 1] | 0x20) == 'x') {
    pos_ += 2;
    size_t digits = pos_;
    while (pos_ < text_.size() && IsHex(text_[pos_])) ++pos_;
    if (pos_ == digits) {
      t.kind = TokenKind::kError;
      t.decoded = "invalid hex literal";
      return t;
    }
    t.text = text_.substr(start, pos_ - start);
    t.kind = TokenKind::kInt;
  } else {
    bool is_double = false;
    while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
    if (pos_ + 1 < text_.size() && text_[pos_] == '.' && IsDigit(text_[pos_ + 1])) {
      is_double = true;
      ++pos_;
      while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] | 0x20) == 'e') {
      size_t e = pos_ + 1;
      if (e < text_.size() && (text_[e] == '+' || text_[e] == '-')) ++e;
      if (e < text_.size() && IsDigit(text_[e])) {
        is_double = true;
        pos_ = e;
        while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
      }
    }
    t.text = text_.substr(start, pos_ - start);
    t.kind = is_double ? TokenKind::kDouble : TokenKind::kInt;
  }
  if (t.kind == TokenKind::kInt && pos_ < text_.size() && (text_[pos_] | 0x20) == 'u') {
    ++pos_;
    t.kind = TokenKind::kUint;
  }
  return t;
}

bool Lexer::Escape(bool bytes, std::string& out, std::string& error) {
  char c = text_[pos_++];
  auto hex = [&](int count, uint32_t* v) {
    *v = 0;
    for (int i = 0; i < count; ++i) {
      if (pos_ >= text_.size() || !IsHex(text_[pos_])) return false;
      *v = *v * 16 + static_cast<uint32_t>(HexValue(text_[pos_++]));
    }
    return true;
  };
  uint32_t v = 0;
  switch (c) {
    case 'a': out += '\a'; return true;
    case 'b': out += '\b'; return true;
    case 'f': out += '\f'; return true;
    case 'n': out += '\n'; return true;
    case 'r': out += '\r'; return true;
    case 't': out += '\t'; return true;
    case 'v': out += '\v'; return true;
    case '\\': case '?': case '"': case '\'': case '`': out += c; return true;
    case 'x': case 'X':
      if (!hex(2, &v)) break;
      if (bytes) {
        out += static_cast<char>(v);
      } else {
        AppendUtf8(out, v);
      }
      return true;
    case 'u': case 'U':
      if (bytes || !hex(c == 'u' ? 4 : 8, &v) || v > 0x10FFFF || (v >= 0xD800 && v < 0xE000)) {
        break;
      }
      AppendUtf8(out, v);
      return true;
    default:
      if (c >= '0' && c <= '3' && pos_ + 1 < text_.size() && text_[pos_] >= '0' &&
          text_[pos_] <= '7' && text_[pos_ + 1] >= '0' && text_[pos_ + 1] <= '7') {
        v = static_cast<uint32_t>((c - '0') * 64 + (text_[pos_] - '0') * 8 + (text_[pos_ + 1] - '0'));
        pos_ += 2;
        if (bytes) {
          out += static_cast<char>(v);
        } else {
          AppendUtf8(out, v);
        }
        return true;
      }
      break;
  }
  error = "invalid escape sequence";
  return false;
}

Token Lexer::StringLiteral(size_t prefix_len, bool raw, bool bytes) {
  Token t;
  t.pos = static_cast<int32_t>(pos_);
  pos_ += prefix_len;
  char q = text_[pos_];
  bool triple = text_.substr(pos_, 3) == std::string(3, q);
  pos_ += triple ? 3 : 1;
  std::string out;
  std::string error;
  while (true) {
    if (pos_ >= text_.size()) {
      t.kind = TokenKind::kError;
      t.decoded = "unterminated string literal";
      return t;
    }
    char c = text_[pos_];
    if (triple ? text_.substr(pos_, 3) == std::string(3, q) : c == q) {
      pos_ += triple ? 3 : 1;
      break;
    }
    if (!triple && (c == '\n' || c == '\r')) {
      t.kind = TokenKind::kError;
      t.decoded = "unterminated string literal";
      return t;
    }
    if (c == '\\' && !raw && pos_ + 1 < text_.size()) {
      ++pos_;
      if (!Escape(bytes, out, error)) {
        t.kind = TokenKind::kError;
        t.decoded = error;
        return t;
      }
      continue;
    }
    out += c;
    ++pos_;
  }
  t.kind = bytes ? TokenKind::kBytes : TokenKind::kString;
  t.decoded = std::move(out);
  return t;
}

}  // namespace gpusched::cel
