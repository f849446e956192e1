// SPDX-License-Identifier: Apache-2.0
// The reader of plugin args (a profile's pluginConfig args object, as a JSON value): every
// factory reads its fields through api::ObjectFields (src/api/fields.h), which declares each field
// by reading it and reports a member nobody read as an unknown field, so a plugin names its
// fields once. Errors come all at once, each naming its path, in the plugin args wording:
//
//   scoringStrategy.resources[0].weight: must be in 1..100, got 0
//   scoringStrategy.resourses: unknown field (did you mean "resources"?)
//   fitWeight: must be an integer
//
// Paths are dotted (api::PathStyle::kDotted). Stateless; thread-safe.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <utility>

#include "src/api/fields.h"
#include "src/common/status.h"

namespace gpusched::plugins::helper {

// The plugin args wording of api::JsonReader's errors: "must be an integer", "must be a list",
// "must be in lo..hi, got v".
const api::Dialect& ArgsDialect();

// Reads a plugin's args with read(fields), fields being an api::ObjectFields over the args object
// at the root path. Null and {} read as an empty object (every field takes its default); the
// type-meta members apiVersion and kind are accepted; args that are not an object are an error.
// Returns OK, or InvalidArgument with every error joined by "; ". `read` may record errors of its
// own (cross-field checks) through fields.Error or fields.reader().
template <typename Read>
common::Status ReadArgs(const boost::json::value& args, Read&& read) {
  api::JsonReader reader(ArgsDialect());
  const boost::json::object none;
  const boost::json::object* object = args.is_null() ? &none : args.if_object();
  if (object == nullptr) {
    reader.Error(api::FieldPath::Text("args"), "must be an object");
    return reader.errors().ToStatus();
  }
  const api::FieldPath root;
  {
    api::ObjectFields fields(reader, *object, root);
    fields.Allow({"apiVersion", "kind"});
    std::forward<Read>(read)(fields);
  }
  return reader.errors().ToStatus();
}

// The args of a plugin that has none: null, {} or type meta alone; any other member is an unknown
// field.
inline common::Status ReadNoArgs(const boost::json::value& args) {
  return ReadArgs(args, [](api::ObjectFields&) {});
}

}  // namespace gpusched::plugins::helper
