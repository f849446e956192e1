// SPDX-License-Identifier: Apache-2.0
// The CEL lexer (internal to the parser): tokens with their byte offsets, literals decoded.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpusched::cel {

enum class TokenKind : uint8_t {
  kEof,
  kIdent,
  kInt,     // text: the digits (decimal or 0x...), value not yet range-checked
  kUint,    // text: the digits without the suffix
  kDouble,  // text: the literal
  kString,  // decoded: the string's bytes (UTF-8)
  kBytes,   // decoded: the bytes
  kOp,      // text: the operator or punctuation
  kError,   // decoded: what is wrong
};

struct Token {
  TokenKind kind = TokenKind::kEof;
  int32_t pos = 0;
  std::string_view text;
  std::string decoded;
  bool quoted = false;  // kIdent written in backticks (a field name such as `content-type`)
};

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}
  Token Next();

 private:
  void SkipSpaceAndComments();
  Token Number();
  Token StringLiteral(size_t prefix_len, bool raw, bool bytes);
  // Decodes one escape sequence starting after the backslash at pos_; false on error.
  bool Escape(bool bytes, std::string& out, std::string& error);

  std::string_view text_;
  size_t pos_ = 0;
};

// Appends the UTF-8 encoding of code point `cp`.
void AppendUtf8(std::string& out, uint32_t cp);

}  // namespace gpusched::cel
