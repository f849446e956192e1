// SPDX-License-Identifier: Apache-2.0
// A recursive-descent parser for CEL's grammar (cel-spec doc/langdef.md, "Syntax"):
//   Expr           = ConditionalOr ["?" ConditionalOr ":" Expr]
//   ConditionalOr  = [ConditionalOr "||"] ConditionalAnd
//   ConditionalAnd = [ConditionalAnd "&&"] Relation
//   Relation       = [Relation Relop] Addition          Relop = < <= >= > == != in
//   Addition       = [Addition ("+"|"-")] Multiplication
//   Multiplication = [Multiplication ("*"|"/"|"%")] Unary
//   Unary          = Member | "!" {"!"} Member | "-" {"-"} Member
//   Member         = Primary | Member "." IDENT ["(" [ExprList] ")"] | Member "[" Expr "]"
//   Primary        = ["."] IDENT ["(" [ExprList] ")"] | "(" Expr ")" | "[" [ExprList] [","] "]"
//                  | "{" [MapInits] [","] "}" | LITERAL
// Message construction (Member "{" FieldInits "}") is recognised and rejected as unsupported.
#include "src/cel/parser.h"

#include <cerrno>
#include <cstdlib>
#include <utility>

#include "src/cel/lexer.h"

namespace gpusched::cel {
namespace {

bool IsReserved(std::string_view id) {
  static constexpr std::string_view kReserved[] = {
      "as",   "break", "const",  "continue",  "else", "for",  "function", "if",
      "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"};
  for (std::string_view r : kReserved) {
    if (id == r) return true;
  }
  return false;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text), lexer_(text) { Advance(); }

  common::StatusOr<ExprPtr> Run() {
    ExprPtr e = ParseExpr();
    if (e != nullptr && tok_.kind != TokenKind::kEof) {
      Fail(tok_.pos, "Syntax error: mismatched input '" + std::string(TokenText()) +
                         "' expecting <EOF>");
    }
    if (!error_.empty()) return common::InvalidArgumentError(FormatError(text_, error_pos_, error_));
    return e;
  }

 private:
  // Counts the parser's recursion; Enter() fails past kMaxParseDepth.
  struct DepthGuard {
    explicit DepthGuard(Parser* p) : p(p) { ++p->depth_; }
    ~DepthGuard() { --p->depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;
    Parser* p;
  };

  std::string_view TokenText() const {
    if (tok_.kind == TokenKind::kEof) return "<EOF>";
    if (!tok_.text.empty()) return tok_.text;
    return text_.substr(static_cast<size_t>(tok_.pos), 1);
  }

  void Advance() {
    tok_ = lexer_.Next();
    if (tok_.kind == TokenKind::kError) Fail(tok_.pos, "Syntax error: " + tok_.decoded);
  }

  std::nullptr_t Fail(int32_t pos, std::string message) {
    if (error_.empty()) {
      error_ = std::move(message);
      error_pos_ = pos;
    }
    return nullptr;
  }

  bool IsOp(std::string_view op) const { return tok_.kind == TokenKind::kOp && tok_.text == op; }

  bool Expect(std::string_view op) {
    if (IsOp(op)) {
      Advance();
      return true;
    }
    Fail(tok_.pos, "Syntax error: mismatched input '" + std::string(TokenText()) + "' expecting '" +
                       std::string(op) + "'");
    return false;
  }

  ExprPtr Node(ExprKind kind, int32_t pos, std::vector<ExprPtr> args = {}) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->pos = pos;
    for (const ExprPtr& a : args) e->depth = std::max(e->depth, a->depth + 1);
    e->args = std::move(args);
    if (e->depth > kMaxParseDepth) {
      return Fail(pos, "expression recursion limit exceeded: " + std::to_string(kMaxParseDepth));
    }
    return e;
  }

  ExprPtr Call(std::string name, int32_t pos, std::vector<ExprPtr> args, bool member = false) {
    ExprPtr e = Node(ExprKind::kCall, pos, std::move(args));
    if (e != nullptr) {
      e->name = std::move(name);
      e->member = member;
    }
    return e;
  }

  ExprPtr ParseExpr() {
    DepthGuard guard(this);
    if (depth_ > kMaxParseDepth) return Fail(tok_.pos, "max recursion depth exceeded");
    ExprPtr cond = ParseLogical(true);
    if (cond == nullptr || !IsOp("?")) return cond;
    int32_t pos = tok_.pos;
    Advance();
    ExprPtr then = ParseLogical(true);
    if (then == nullptr || !Expect(":")) return nullptr;
    ExprPtr otherwise = ParseExpr();
    if (otherwise == nullptr) return nullptr;
    std::vector<ExprPtr> args;
    args.push_back(std::move(cond));
    args.push_back(std::move(then));
    args.push_back(std::move(otherwise));
    return Node(ExprKind::kTernary, pos, std::move(args));
  }

  // || (or_level) and && chains become one n-ary node, as cel-go balances them.
  ExprPtr ParseLogical(bool or_level) {
    std::string_view op = or_level ? "||" : "&&";
    ExprPtr first = or_level ? ParseLogical(false) : ParseRelation();
    if (first == nullptr || !IsOp(op)) return first;
    int32_t pos = tok_.pos;
    std::vector<ExprPtr> args;
    args.push_back(std::move(first));
    while (IsOp(op)) {
      Advance();
      ExprPtr next = or_level ? ParseLogical(false) : ParseRelation();
      if (next == nullptr) return nullptr;
      args.push_back(std::move(next));
    }
    return Node(or_level ? ExprKind::kOr : ExprKind::kAnd, pos, std::move(args));
  }

  ExprPtr ParseRelation() {
    ExprPtr lhs = ParseAddition();
    while (lhs != nullptr) {
      std::string fn;
      if (tok_.kind == TokenKind::kIdent && tok_.text == "in") {
        fn = "@in";
      } else if (IsOp("<") || IsOp("<=") || IsOp(">") || IsOp(">=") || IsOp("==") || IsOp("!=")) {
        fn = "_" + std::string(tok_.text) + "_";
      } else {
        break;
      }
      int32_t pos = tok_.pos;
      Advance();
      ExprPtr rhs = ParseAddition();
      if (rhs == nullptr) return nullptr;
      std::vector<ExprPtr> args;
      args.push_back(std::move(lhs));
      args.push_back(std::move(rhs));
      lhs = Call(std::move(fn), pos, std::move(args));
    }
    return lhs;
  }

  ExprPtr ParseBinary(bool additive) {
    ExprPtr lhs = additive ? ParseBinary(false) : ParseUnary();
    while (lhs != nullptr && (additive ? (IsOp("+") || IsOp("-"))
                                       : (IsOp("*") || IsOp("/") || IsOp("%")))) {
      std::string fn = "_" + std::string(tok_.text) + "_";
      int32_t pos = tok_.pos;
      Advance();
      ExprPtr rhs = additive ? ParseBinary(false) : ParseUnary();
      if (rhs == nullptr) return nullptr;
      std::vector<ExprPtr> args;
      args.push_back(std::move(lhs));
      args.push_back(std::move(rhs));
      lhs = Call(std::move(fn), pos, std::move(args));
    }
    return lhs;
  }
  ExprPtr ParseAddition() { return ParseBinary(true); }

  ExprPtr ParseUnary() {
    DepthGuard guard(this);
    if (depth_ > kMaxParseDepth) return Fail(tok_.pos, "max recursion depth exceeded");
    if (!IsOp("!") && !IsOp("-")) return ParseMember();
    std::string_view op = tok_.text;
    int32_t pos = tok_.pos;
    int count = 0;
    while (IsOp(op)) {
      ++count;
      Advance();
    }
    bool negative_literal = false;
    if (op == "-" && (tok_.kind == TokenKind::kInt || tok_.kind == TokenKind::kDouble)) {
      negative_literal = true;  // the literal takes the last '-' (CEL's grammar: sign=MINUS? NUM)
      --count;
    }
    ExprPtr operand = ParseMember(negative_literal);
    if (operand == nullptr || count % 2 == 0) return operand;
    std::vector<ExprPtr> args;
    args.push_back(std::move(operand));
    if (op == "!") return Node(ExprKind::kNot, pos, std::move(args));
    return Call("-_", pos, std::move(args));
  }

  ExprPtr ParseMember(bool negative_literal = false) {
    ExprPtr e = ParsePrimary(negative_literal);
    while (e != nullptr) {
      int32_t pos = tok_.pos;
      if (IsOp(".")) {
        Advance();
        if (tok_.kind != TokenKind::kIdent) {
          return Fail(tok_.pos, "Syntax error: mismatched input '" + std::string(TokenText()) +
                                    "' expecting IDENTIFIER");
        }
        std::string field(tok_.text);
        bool quoted = tok_.quoted;
        Advance();
        if (IsOp("(") && !quoted) {
          e = ParseCall(std::move(field), pos, std::move(e));
        } else {
          std::vector<ExprPtr> args;
          args.push_back(std::move(e));
          e = Node(ExprKind::kSelect, pos, std::move(args));
          if (e != nullptr) e->name = std::move(field);
        }
      } else if (IsOp("[")) {
        Advance();
        ExprPtr index = ParseExpr();
        if (index == nullptr || !Expect("]")) return nullptr;
        std::vector<ExprPtr> args;
        args.push_back(std::move(e));
        args.push_back(std::move(index));
        e = Node(ExprKind::kIndex, pos, std::move(args));
      } else if (IsOp("{") && (e->kind == ExprKind::kIdent || e->kind == ExprKind::kSelect)) {
        return Fail(pos, "unsupported syntax: message construction");
      } else {
        break;
      }
    }
    return e;
  }

  // Parses "(" args ")" after a function name; receiver is null for a global call.
  ExprPtr ParseCall(std::string name, int32_t pos, ExprPtr receiver) {
    std::vector<ExprPtr> args;
    bool member = receiver != nullptr;
    if (member) args.push_back(std::move(receiver));
    if (!ParseList(")", &args)) return nullptr;
    return ExpandMacro(std::move(name), pos, std::move(args), member);
  }

  // Parses a comma-separated list of expressions up to `close` (consumed); a trailing comma is
  // allowed in lists and maps, not in calls.
  bool ParseList(std::string_view close, std::vector<ExprPtr>* out) {
    Advance();  // the opening bracket
    while (!IsOp(close)) {
      ExprPtr e = ParseExpr();
      if (e == nullptr) return false;
      out->push_back(std::move(e));
      if (!IsOp(",")) break;
      Advance();
      if (close == ")" && IsOp(close)) {
        Fail(tok_.pos, "Syntax error: mismatched input ')'");
        return false;
      }
    }
    return Expect(close);
  }

  ExprPtr ParsePrimary(bool negative_literal);
  ExprPtr ParseLiteral(bool negative);
  ExprPtr ParseMapLiteral();
  ExprPtr ExpandMacro(std::string name, int32_t pos, std::vector<ExprPtr> args, bool member);
  ExprPtr Comprehension(MacroKind kind, int32_t pos, std::vector<ExprPtr> args);

  std::string_view text_;
  Lexer lexer_;
  Token tok_;
  std::string error_;
  int32_t error_pos_ = 0;
  int depth_ = 0;
};

ExprPtr Parser::ParsePrimary(bool negative_literal) {
  int32_t pos = tok_.pos;
  if (tok_.kind == TokenKind::kIdent || IsOp(".")) {
    if (IsOp(".")) {
      Advance();  // a leading dot names the root scope; there are no containers here
      if (tok_.kind != TokenKind::kIdent) {
        return Fail(tok_.pos, "Syntax error: mismatched input '" + std::string(TokenText()) +
                                  "' expecting IDENTIFIER");
      }
    }
    std::string name(tok_.text);
    if (tok_.quoted) return Fail(pos, "Syntax error: quoted identifiers name fields only");
    if (name == "true" || name == "false" || name == "null") return ParseLiteral(false);
    if (name == "in") return Fail(pos, "Syntax error: mismatched input 'in'");
    if (IsReserved(name)) return Fail(pos, "reserved identifier: " + name);
    Advance();
    if (IsOp("(")) return ParseCall(std::move(name), pos, nullptr);
    ExprPtr e = Node(ExprKind::kIdent, pos);
    e->name = std::move(name);
    return e;
  }
  if (IsOp("(")) {
    Advance();
    ExprPtr e = ParseExpr();
    if (e == nullptr || !Expect(")")) return nullptr;
    return e;
  }
  if (IsOp("[")) {
    std::vector<ExprPtr> elems;
    if (!ParseList("]", &elems)) return nullptr;
    return Node(ExprKind::kList, pos, std::move(elems));
  }
  if (IsOp("{")) return ParseMapLiteral();
  if (tok_.kind == TokenKind::kEof || tok_.kind == TokenKind::kOp) {
    return Fail(pos, "Syntax error: mismatched input '" + std::string(TokenText()) + "'");
  }
  return ParseLiteral(negative_literal);
}

ExprPtr Parser::ParseMapLiteral() {
  int32_t pos = tok_.pos;
  Advance();
  std::vector<ExprPtr> args;
  while (!IsOp("}")) {
    ExprPtr key = ParseExpr();
    if (key == nullptr || !Expect(":")) return nullptr;
    ExprPtr value = ParseExpr();
    if (value == nullptr) return nullptr;
    args.push_back(std::move(key));
    args.push_back(std::move(value));
    if (!IsOp(",")) break;
    Advance();
  }
  if (!Expect("}")) return nullptr;
  return Node(ExprKind::kMap, pos, std::move(args));
}

ExprPtr Parser::ParseLiteral(bool negative) {
  ExprPtr e = Node(ExprKind::kConst, tok_.pos);
  Token t = tok_;
  Advance();
  switch (t.kind) {
    case TokenKind::kIdent:
      e->value = t.text == "null" ? Value::Null() : Value::Bool(t.text == "true");
      return e;
    case TokenKind::kString: e->value = Value::String(std::move(t.decoded)); return e;
    case TokenKind::kBytes: e->value = Value::Bytes(std::move(t.decoded)); return e;
    case TokenKind::kDouble: {
      std::string s(t.text);
      double d = std::strtod(s.c_str(), nullptr);
      e->value = Value::Double(negative ? -d : d);
      return e;
    }
    case TokenKind::kInt:
    case TokenKind::kUint: {
      std::string s(t.text);
      bool hex = s.size() > 2 && (s[1] | 0x20) == 'x';
      errno = 0;
      unsigned long long u = std::strtoull(hex ? s.c_str() + 2 : s.c_str(), nullptr, hex ? 16 : 10);
      bool range = errno == ERANGE;
      if (t.kind == TokenKind::kUint) {
        if (range || negative) return Fail(t.pos, "invalid uint literal");
        e->value = Value::Uint(u);
        return e;
      }
      if (range || u > (negative ? 9223372036854775808ULL : 9223372036854775807ULL)) {
        return Fail(t.pos, "invalid int literal");
      }
      e->value = Value::Int(negative ? static_cast<int64_t>(0 - u) : static_cast<int64_t>(u));
      return e;
    }
    default:
      return Fail(t.pos, "Syntax error: mismatched input '" + std::string(t.text) + "'");
  }
}

ExprPtr Parser::Comprehension(MacroKind kind, int32_t pos, std::vector<ExprPtr> args) {
  // args: range, iteration variable (ident), then the macro's expressions.
  if (args[1]->kind != ExprKind::kIdent) return Fail(args[1]->pos, "argument must be a simple name");
  std::string var = args[1]->name;
  args.erase(args.begin() + 1);
  ExprPtr e = Node(ExprKind::kComprehension, pos, std::move(args));
  if (e != nullptr) {
    e->macro = kind;
    e->name = std::move(var);
  }
  return e;
}

ExprPtr Parser::ExpandMacro(std::string name, int32_t pos, std::vector<ExprPtr> args,
                            bool member) {
  if (!member && name == "has" && args.size() == 1) {
    if (args[0]->kind != ExprKind::kSelect) return Fail(args[0]->pos, "invalid argument to has() macro");
    ExprPtr e = std::move(args[0]);
    e->test_only = true;
    return e;
  }
  if (member && args[0]->kind == ExprKind::kIdent && args[0]->name == "cel" && name == "bind" &&
      args.size() == 4) {
    if (args[1]->kind != ExprKind::kIdent) {
      return Fail(args[1]->pos, "cel.bind() variable names must be simple identifiers");
    }
    std::string var = args[1]->name;
    std::vector<ExprPtr> rest;
    rest.push_back(std::move(args[2]));
    rest.push_back(std::move(args[3]));
    ExprPtr e = Node(ExprKind::kBind, pos, std::move(rest));
    if (e != nullptr) e->name = std::move(var);
    return e;
  }
  if (member && args.size() == 3) {
    if (name == "all") return Comprehension(MacroKind::kAll, pos, std::move(args));
    if (name == "exists") return Comprehension(MacroKind::kExists, pos, std::move(args));
    if (name == "exists_one") return Comprehension(MacroKind::kExistsOne, pos, std::move(args));
    if (name == "map") return Comprehension(MacroKind::kMap, pos, std::move(args));
    if (name == "filter") return Comprehension(MacroKind::kFilter, pos, std::move(args));
  }
  if (member && args.size() == 4 && name == "map") {
    return Comprehension(MacroKind::kMapFilter, pos, std::move(args));
  }
  return Call(std::move(name), pos, std::move(args), member);
}

}  // namespace

std::string FormatError(std::string_view text, int32_t pos, std::string_view message) {
  size_t p = std::min(static_cast<size_t>(pos < 0 ? 0 : pos), text.size());
  size_t line_start = text.rfind('\n', p == 0 ? 0 : p - 1);
  line_start = (line_start == std::string_view::npos || p == 0) ? 0 : line_start + 1;
  int line = 1;
  for (size_t i = 0; i < line_start; ++i) line += text[i] == '\n' ? 1 : 0;
  size_t line_end = text.find('\n', line_start);
  std::string_view src = text.substr(line_start, line_end == std::string_view::npos
                                                     ? std::string_view::npos
                                                     : line_end - line_start);
  size_t col = p - line_start;
  std::string out = "ERROR: <input>:" + std::to_string(line) + ":" + std::to_string(col + 1) +
                    ": " + std::string(message) + "\n | " + std::string(src) + "\n | " +
                    std::string(col, '.') + "^";
  return out;
}

common::StatusOr<ExprPtr> Parse(std::string_view text) {
  if (text.size() > kMaxExpressionSize) {
    return common::InvalidArgumentError("expression size " + std::to_string(text.size()) +
                                        " exceeds limit " + std::to_string(kMaxExpressionSize));
  }
  return Parser(text).Run();
}

}  // namespace gpusched::cel
