// SPDX-License-Identifier: Apache-2.0
// The function library (internal): CEL's standard functions and operators, the strings extension
// (version 2), the Kubernetes libraries DRA selectors use (quantity, semver, regex, lists, sets),
// and the evaluation state builtins charge their cost to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/cel/ast.h"
#include "src/cel/value.h"

namespace gpusched::cel {

struct EvalState {
  Value* slots = nullptr;
  uint64_t cost = 0;
  uint64_t limit = UINT64_MAX;
  bool exceeded = false;
  const Expr* call = nullptr;  // the call a builtin runs for (its precompiled regex)

  // Adds `n` to the cost; false (and `exceeded` set) once over the limit.
  bool Charge(uint64_t n) {
    cost += n;
    if (cost > limit) exceeded = true;
    return !exceeded;
  }
};

struct Builtin {
  std::string_view name;
  bool member;       // called as receiver.name(...)
  int arity;         // arguments, the receiver included
  BuiltinFn fn;
  StaticType result;  // kDyn when it depends on the arguments
};

// The overloads named `name`, or an empty span.
const std::vector<Builtin>& Builtins();
const Builtin* FindBuiltin(std::string_view name, bool member, size_t arity);
bool IsFunctionName(std::string_view name);

// Error values with cel-go's messages.
Value NoSuchOverload();
Value NoSuchKey(const Value& key);

// The library parts, each appending its overloads.
void AddCoreBuiltins(std::vector<Builtin>& out);
void AddStringBuiltins(std::vector<Builtin>& out);
void AddKubernetesBuiltins(std::vector<Builtin>& out);

// Code-point helpers for the string functions.
size_t CodePointCount(std::string_view s);
// Byte offset of code point `index` (the size when index == count); npos when beyond.
size_t CodePointOffset(std::string_view s, size_t index);
bool ValidUtf8(std::string_view s);

// Whether `name` takes a regular expression as argument 1 (matches, find, findAll): the checker
// precompiles a literal pattern into Expr::regex.
bool TakesRegex(std::string_view name);
// Compiles an RE2 pattern; null and *error set when it does not compile.
std::shared_ptr<const re2::RE2> CompileRegex(std::string_view pattern, std::string* error);

}  // namespace gpusched::cel
