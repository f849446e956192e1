// SPDX-License-Identifier: Apache-2.0
// Manifests one document at a time, for callers that keep going past a bad object (the
// simulator reports and skips it). DecodeManifests (decode.h) is these two, stopping at the first
// error. Defined in decode.cc; no function here throws. Thread-safe as decode.h.
#pragma once

#include <boost/json/value.hpp>
#include <string_view>
#include <vector>

#include "src/api/decode.h"
#include "src/common/status.h"

namespace gpusched::api {

// The documents of a multi-document YAML (or JSON) text, in order, empty YAML documents left
// out: text that starts with '{' or '[' is read as JSON (a top-level array is a list of
// documents), falling back to YAML. Errors name `source` and the line (a syntax error).
common::StatusOr<std::vector<boost::json::value>> ParseManifestDocuments(std::string_view text,
                                                                         std::string_view source);

// ParseManifestDocuments, recovering per document: YAML text is split at the lines that start a
// document ("---", alone or before a space: a document marker ends even a block scalar) and each
// document is parsed on its own, so a syntax error loses only its document (one error in its
// place; its line counted in the whole text). JSON-looking text is parsed whole, as
// ParseManifestDocuments does.
std::vector<common::StatusOr<boost::json::value>> ParseManifestDocumentsEach(
    std::string_view text, std::string_view source);

// Decodes one document as DecodeManifests does (`items` of v1 List, PodList, ... expanded). The
// document may be changed (an item's missing kind filled in, an OtherObject's json moved out).
// Errors name the object and the field, e.g. "pod default/a: spec.containers[0]...".
common::StatusOr<std::vector<Object>> DecodeManifestDocument(boost::json::value& document);

}  // namespace gpusched::api
