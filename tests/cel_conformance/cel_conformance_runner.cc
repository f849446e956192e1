// SPDX-License-Identifier: Apache-2.0
// Runs CEL conformance cases through src/cel (driven by cel_conformance.py). Input: a JSON file,
// a list of {"id", "expr", "check", "vars": [{"name", "value"?}], ...}; output: one JSON line per
// case, {"id", "result": <typed value>} or {"id", "error", "phase": "compile"|"eval"}. Typed
// values: {"null"}, {"bool"}, {"int": "decimal"}, {"uint": "decimal"}, {"double": "repr"},
// {"string": "hex of UTF-8"}, {"bytes": "hex"}, {"list": [...]}, {"map": [[k, v], ...]},
// {"type": "name"}.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <boost/json.hpp>

#include "src/cel/program.h"

namespace json = boost::json;
using gpusched::cel::Kind;
using gpusched::cel::Value;

namespace {

std::string Hex(std::string_view s) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::string Unhex(std::string_view s) {
  std::string out;
  for (size_t i = 0; i + 1 < s.size(); i += 2) {
    out += static_cast<char>(std::stoi(std::string(s.substr(i, 2)), nullptr, 16));
  }
  return out;
}

std::string DoubleText(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", d);
  return buf;
}

json::value Encode(const Value& v) {
  json::object o;
  switch (v.kind()) {
    case Kind::kNull: o["null"] = nullptr; break;
    case Kind::kBool: o["bool"] = v.bool_value(); break;
    case Kind::kInt: o["int"] = std::to_string(v.int_value()); break;
    case Kind::kUint: o["uint"] = std::to_string(v.uint_value()); break;
    case Kind::kDouble: o["double"] = DoubleText(v.double_value()); break;
    case Kind::kString: o["string"] = Hex(v.text()); break;
    case Kind::kBytes: o["bytes"] = Hex(v.text()); break;
    case Kind::kType: o["type"] = std::string(v.text()); break;
    case Kind::kList: {
      json::array a;
      for (size_t i = 0; i < v.list().size(); ++i) a.push_back(Encode(v.list().at(i)));
      o["list"] = std::move(a);
      break;
    }
    case Kind::kMap: {
      json::array a;
      for (size_t i = 0; i < v.map().size(); ++i) {
        Value key = v.map().KeyAt(i);
        Value val;
        v.map().Find(key, &val);
        a.push_back(json::array{Encode(key), Encode(val)});
      }
      o["map"] = std::move(a);
      break;
    }
    default: o["other"] = gpusched::cel::DebugString(v); break;
  }
  return o;
}

Value Decode(const json::value& j) {
  const json::object& o = j.as_object();
  const auto& [kind, x] = *o.begin();
  if (kind == "bool") return Value::Bool(x.as_bool());
  if (kind == "int") return Value::Int(std::stoll(std::string(x.as_string())));
  if (kind == "uint") return Value::Uint(std::stoull(std::string(x.as_string())));
  if (kind == "double") {
    std::string s(x.as_string());
    if (s == "nan") return Value::Double(NAN);
    if (s == "inf") return Value::Double(INFINITY);
    if (s == "-inf") return Value::Double(-INFINITY);
    return Value::Double(std::stod(s));
  }
  if (kind == "string") return Value::String(Unhex(x.as_string()));
  if (kind == "bytes") return Value::Bytes(Unhex(x.as_string()));
  if (kind == "type") return Value::Type(x.as_string());  // only compared by name below
  if (kind == "list") {
    auto list = std::make_shared<gpusched::cel::VectorList>();
    for (const json::value& e : x.as_array()) list->elems().push_back(Decode(e));
    return Value::List(std::move(list));
  }
  if (kind == "map") {
    auto map = std::make_shared<gpusched::cel::VectorMap>();
    for (const json::value& e : x.as_array()) {
      map->Insert(Decode(e.as_array()[0]), Decode(e.as_array()[1]));
    }
    return Value::Map(std::move(map));
  }
  return Value::Null();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: cel_conformance_runner CASES.json\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  std::stringstream buf;
  buf << in.rdbuf();
  json::value cases = json::parse(buf.str());
  for (const json::value& c : cases.as_array()) {
    const json::object& o = c.as_object();
    gpusched::cel::CompileOptions options;
    options.check = o.at("check").as_bool();
    std::vector<std::string> names;
    std::vector<Value> values;
    for (const json::value& v : o.at("vars").as_array()) {
      names.emplace_back(v.as_object().at("name").as_string());
      const json::value* value = v.as_object().if_contains("value");
      values.push_back(value != nullptr ? Decode(*value)
                                        : Value::Error("no such attribute: " + names.back()));
    }
    options.variables = names;
    json::object out;
    out["id"] = o.at("id");
    auto program = gpusched::cel::CompileExpression(std::string(o.at("expr").as_string()), options);
    if (!program.ok()) {
      out["error"] = std::string(program.status().message());
      out["phase"] = "compile";
    } else {
      Value result = (*program)->Evaluate(values, gpusched::cel::kSelectorMaxCost);
      if (result.is_error()) {
        out["error"] = std::string(result.text());
        out["phase"] = "eval";
      } else {
        out["result"] = Encode(result);
      }
    }
    std::cout << json::serialize(out) << "\n";
  }
  return 0;
}
