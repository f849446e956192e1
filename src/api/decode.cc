// SPDX-License-Identifier: Apache-2.0
// The entry points of decode.h: DecodePod / DecodeNode (the decoders themselves are in
// decode_pod.cc and decode_node.cc, the pieces they share in decode_common.cc), RFC 3339 times,
// JSON parsing and multi-document manifests. Boost.JSON is used only through its non-throwing
// accessors (if_object, if_contains, ...) or inside try blocks, so no exception leaves this file.
#include "src/api/decode.h"

#include <boost/json.hpp>
#include <limits>
#include <string>
#include <utility>

#include "src/api/decode_internal.h"
#include "src/api/fields.h"
#include "src/api/manifest.h"
#include "src/common/strings.h"

namespace gpusched::api {
namespace {

namespace json = boost::json;
using common::Status;
using decode_internal::ObjectReader;

int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {  // H. Hinnant's algorithm
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

}  // namespace

// RFC 3339: 2024-05-01T12:00:00Z, 2024-05-01T12:00:00.123456+02:00.
std::string_view PeekString(const json::value& object, std::string_view key) {
  const json::object* o = object.if_object();
  const json::value* v = o != nullptr ? JsonReader::Member(*o, key) : nullptr;
  const json::string* str = v != nullptr ? v->if_string() : nullptr;
  return str != nullptr ? std::string_view(*str) : std::string_view();
}

std::string_view MetaString(const json::value& object, std::string_view key) {
  const json::object* o = object.if_object();
  const json::value* meta = o != nullptr ? JsonReader::Member(*o, "metadata") : nullptr;
  return meta != nullptr ? PeekString(*meta, key) : std::string_view();
}

common::StatusOr<ListPage> TakeListPage(json::value& list, std::string_view source) {
  JsonReader r(PlainDialect());
  const FieldPath root;
  ListPage page;
  const json::object* o = r.AsObject(list, root);
  if (o != nullptr && r.Array(*o, "items", root) != nullptr) {
    json::array& items = list.get_object().at("items").get_array();
    page.items.reserve(items.size());
    for (json::value& item : items) page.items.push_back(std::move(item));
  }
  if (const json::object* meta = o != nullptr ? r.Object(*o, "metadata", root) : nullptr) {
    const FieldPath mp = root.Key("metadata");
    page.continue_token = r.StringOr(*meta, "continue", mp);
    page.resource_version = r.StringOr(*meta, "resourceVersion", mp);
  }
  if (!r.ok()) return r.errors().ToStatus(source);
  return page;
}

std::optional<common::TimePoint> ParseRfc3339(std::string_view s) {
  size_t pos = 0;
  auto digits = [&](size_t n, int64_t* out) {
    if (pos + n > s.size()) return false;
    int64_t v = 0;
    for (size_t i = 0; i < n; ++i) {
      char c = s[pos + i];
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    pos += n;
    *out = v;
    return true;
  };
  auto expect = [&](char a, char b) {
    if (pos >= s.size() || (s[pos] != a && s[pos] != b)) return false;
    ++pos;
    return true;
  };
  int64_t y, mo, d, h, mi, sec;
  if (!digits(4, &y) || !expect('-', '-') || !digits(2, &mo) || !expect('-', '-') ||
      !digits(2, &d) || !expect('T', 't') || !digits(2, &h) || !expect(':', ':') ||
      !digits(2, &mi) || !expect(':', ':') || !digits(2, &sec)) {
    return std::nullopt;
  }
  static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (mo < 1 || mo > 12 || d < 1 || d > kDays[mo - 1] || (mo == 2 && d == 29 && !leap) || h > 23 ||
      mi > 59 || sec > 59) {
    return std::nullopt;
  }
  int64_t nanos = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    size_t n = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (n < 9) nanos = nanos * 10 + (s[pos] - '0');
      ++n;
      ++pos;
    }
    if (n == 0) return std::nullopt;
    for (size_t i = n; i < 9; ++i) nanos *= 10;
  }
  int64_t offset = 0;
  if (expect('Z', 'z')) {
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int64_t sign = s[pos] == '-' ? -1 : 1;
    ++pos;
    int64_t oh, om;
    if (!digits(2, &oh) || !expect(':', ':') || !digits(2, &om) || oh > 23 || om > 59) {
      return std::nullopt;
    }
    offset = sign * (oh * 3600 + om * 60);
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  int64_t secs = DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset;
  // Nanoseconds since the epoch must fit in int64: years 1678..2261.
  constexpr int64_t kLimit = std::numeric_limits<int64_t>::max() / 1'000'000'000 - 1;
  if (secs > kLimit || secs < -kLimit) return std::nullopt;
  return common::TimePoint(common::Duration(secs * 1'000'000'000 + nanos));
}

namespace {

// Decodes `root` with `decode` (DecodePodObject, DecodeNodeObject): the object, or its first
// error as InvalidArgument "kind name: path: why".
template <typename T, typename Decode>
common::StatusOr<T> DecodeObject(std::string_view kind, const json::object& root, Decode decode) {
  ObjectReader r;
  T object = decode(r, root);
  if (r.ok()) return object;
  return common::InvalidArgumentError(decode_internal::Subject(kind, root) + ": " +
                                      r.errors().list().front());
}

template <typename Decode>
std::vector<std::string> ErrorsOfValue(std::string_view kind, const json::value& v, Decode decode) {
  const json::object* o = v.if_object();
  if (o == nullptr) return {std::string(decode_internal::NotAnObject(kind, v).message())};
  ObjectReader r;
  decode(r, *o);
  return decode_internal::ErrorsOf(r, kind, *o);
}

// ---------------------------------------------------------------------------------------------
// Manifests

Status DecodeDocument(json::value& doc, std::vector<Object>* out, int depth);

Status DecodeItems(json::object& list, std::string_view list_kind, std::vector<Object>* out,
                   int depth) {
  json::value* items = list.if_contains("items");
  if (items == nullptr || items->is_null()) return Status::Ok();
  json::array* a = items->if_array();
  if (a == nullptr) {
    return common::InvalidArgumentError(std::string(list_kind) + ": items: expected array, got " +
                                        std::string(decode_internal::KindName(*items)));
  }
  // Items of a typed list may omit their kind ("PodList" items are pods).
  std::string_view item_kind;
  if (list_kind.size() > 4 && list_kind != "List") {
    item_kind = list_kind.substr(0, list_kind.size() - 4);
  }
  for (size_t i = 0; i < a->size(); ++i) {
    json::value& item = (*a)[i];
    if (json::object* o = item.if_object(); o != nullptr && !item_kind.empty()) {
      json::value* k = o->if_contains("kind");
      if (k == nullptr || k->is_null()) (*o)["kind"] = item_kind;
    }
    Status s = DecodeDocument(item, out, depth + 1);
    if (!s.ok()) return s.WithContext("items[" + std::to_string(i) + "]");
  }
  return Status::Ok();
}

Status DecodeDocument(json::value& doc, std::vector<Object>* out, int depth) {
  json::object* o = doc.if_object();
  if (o == nullptr) return decode_internal::NotAnObject("document", doc);
  std::string_view kind;
  if (const json::value* k = o->if_contains("kind")) {
    if (const json::string* s = k->if_string()) kind = *s;
  }
  if (kind.empty()) return common::InvalidArgumentError("missing \"kind\"");
  if (kind == "Pod") {
    common::StatusOr<Pod> pod = DecodeObject<Pod>("pod", *o, decode_internal::DecodePodObject);
    if (!pod.ok()) return std::move(pod).status();
    out->emplace_back(std::move(*pod));
    return Status::Ok();
  }
  if (kind == "Node") {
    common::StatusOr<Node> node = DecodeObject<Node>("node", *o, decode_internal::DecodeNodeObject);
    if (!node.ok()) return std::move(node).status();
    out->emplace_back(std::move(*node));
    return Status::Ok();
  }
  // PodDisruptionBudget (policy/v1) and PriorityClass (scheduling.k8s.io/v1); an item of a typed
  // list may omit its apiVersion.
  std::string_view api_version;
  if (const json::value* v = o->if_contains("apiVersion")) {
    if (const json::string* s = v->if_string()) api_version = *s;
  }
  if (kind == "PodDisruptionBudget" && (api_version.empty() || api_version == "policy/v1")) {
    common::StatusOr<PodDisruptionBudget> pdb = DecodePodDisruptionBudget(doc);
    if (!pdb.ok()) return std::move(pdb).status();
    out->emplace_back(std::move(*pdb));
    return Status::Ok();
  }
  if (kind == "PriorityClass" && (api_version.empty() || api_version == "scheduling.k8s.io/v1")) {
    common::StatusOr<PriorityClass> pc = DecodePriorityClass(doc);
    if (!pc.ok()) return std::move(pc).status();
    out->emplace_back(std::move(*pc));
    return Status::Ok();
  }
  if (common::EndsWith(kind, "List") && o->contains("items")) {
    if (depth > 8) return common::InvalidArgumentError("lists nested too deeply");
    std::string list_kind(kind);  // `kind` points into *o, which the items loop may change
    return DecodeItems(*o, list_kind, out, depth);
  }
  OtherObject other;
  other.kind = std::string(kind);
  other.api_version = std::string(api_version);
  if (const json::value* m = o->if_contains("metadata")) {
    if (const json::object* mo = m->if_object()) {
      if (const json::value* n = mo->if_contains("name")) {
        if (const json::string* s = n->if_string()) other.name = std::string(*s);
      }
    }
  }
  other.json = std::move(doc);
  out->emplace_back(std::move(other));
  return Status::Ok();
}

bool LooksLikeJson(std::string_view text) {
  for (char ch : text) {
    if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') continue;
    return ch == '{' || ch == '[';
  }
  return false;
}

}  // namespace

common::StatusOr<Pod> DecodePod(const boost::json::value& json) {
  const json::object* o = json.if_object();
  if (o == nullptr) return decode_internal::NotAnObject("pod", json);
  return DecodeObject<Pod>("pod", *o, decode_internal::DecodePodObject);
}

common::StatusOr<Node> DecodeNode(const boost::json::value& json) {
  const json::object* o = json.if_object();
  if (o == nullptr) return decode_internal::NotAnObject("node", json);
  return DecodeObject<Node>("node", *o, decode_internal::DecodeNodeObject);
}

std::vector<std::string> PodErrors(const boost::json::value& json) {
  return ErrorsOfValue("pod", json, decode_internal::DecodePodObject);
}

std::vector<std::string> NodeErrors(const boost::json::value& json) {
  return ErrorsOfValue("node", json, decode_internal::DecodeNodeObject);
}

namespace {

// Feeds `text` to `p` (a fresh or reset parser) and finishes it; the error names `source` and the
// line, column and offset. The value is then p.release().
common::Status ParseInto(json::stream_parser& p, std::string_view text, std::string_view source) {
  auto error = [&](size_t offset, std::string_view why) {
    size_t line = 1;
    size_t column = 1;
    for (size_t i = 0; i < offset && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string msg(source);
    msg += ": invalid JSON at line " + std::to_string(line) + ", column " + std::to_string(column) +
           " (offset " + std::to_string(offset) + "): ";
    msg += why;
    return common::InvalidArgumentError(std::move(msg));
  };
  try {
    boost::system::error_code ec;
    size_t n = p.write_some(text.data(), text.size(), ec);
    if (ec) return error(n, ec.message());
    for (size_t i = n; i < text.size(); ++i) {
      char ch = text[i];
      if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r') {
        return error(i, "unexpected data after the JSON value");
      }
    }
    p.finish(ec);
    if (ec) return error(text.size(), ec.message());
    return common::Status::Ok();
  } catch (const std::exception& e) {  // only std::bad_alloc is expected here
    return error(0, e.what());
  }
}

json::parse_options ApiParseOptions() {
  json::parse_options opts;
  opts.max_depth = 128;  // managedFields nest deeper than Boost's default of 32
  return opts;
}

}  // namespace

common::StatusOr<boost::json::value> ParseJson(std::string_view text, std::string_view source,
                                               boost::json::storage_ptr storage) {
  try {
    json::stream_parser p(json::storage_ptr(), ApiParseOptions());
    p.reset(std::move(storage));
    GPUSCHED_RETURN_IF_ERROR(ParseInto(p, text, source));
    return p.release();
  } catch (const std::exception& e) {  // std::bad_alloc
    return common::ResourceExhaustedError(std::string(source) + ": " + e.what());
  }
}

struct JsonParser::Impl {
  explicit Impl(size_t arena_bytes)
      : buffer(new unsigned char[arena_bytes]),
        arena(buffer.get(), arena_bytes),
        parser(json::storage_ptr(), ApiParseOptions()) {}
  std::unique_ptr<unsigned char[]> buffer;
  json::monotonic_resource arena;
  json::stream_parser parser;
  json::value value;
};

JsonParser::JsonParser(size_t arena_bytes) : impl_(std::make_unique<Impl>(arena_bytes)) {}
JsonParser::~JsonParser() = default;

common::StatusOr<const boost::json::value*> JsonParser::Parse(std::string_view text,
                                                              std::string_view source) {
  Impl& m = *impl_;
  m.value = nullptr;  // release the previous value before the arena it lives in
  m.arena.release();
  try {
    m.parser.reset(json::storage_ptr(&m.arena));
    common::Status s = ParseInto(m.parser, text, source);
    if (!s.ok()) {
      m.parser.reset();
      return s;
    }
    m.value = m.parser.release();
    return &m.value;
  } catch (const std::exception& e) {  // std::bad_alloc
    return common::ResourceExhaustedError(std::string(source) + ": " + e.what());
  }
}

namespace {

// Whether a line of YAML holds content: not blank, not a comment, not a directive.
bool IsContentLine(std::string_view line) {
  const size_t first = line.find_first_not_of(" \t\r");
  return first != std::string_view::npos && line[first] != '#' && line[first] != '%';
}

bool IsDocumentStart(std::string_view line) {
  return line.starts_with("---") &&
         (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r');
}

// The YAML documents of `text` with the line each starts at: split before every document start
// that follows content (comments and directives stay with the document after them).
std::vector<std::pair<std::string_view, int>> SplitYamlDocuments(std::string_view text) {
  std::vector<std::pair<std::string_view, int>> out;
  size_t start = 0;
  int start_line = 1;
  bool content = false;
  int line = 1;
  for (size_t pos = 0; pos < text.size(); ++line) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    const std::string_view l = text.substr(pos, eol - pos);
    if (IsDocumentStart(l) && content) {
      out.emplace_back(text.substr(start, pos - start), start_line);
      start = pos;
      start_line = line;
      content = false;
    }
    // "--- {a: 1}" holds content after its marker; "---" alone does not.
    content = content || IsContentLine(IsDocumentStart(l) ? l.substr(3) : l);
    pos = eol + 1;
  }
  out.emplace_back(text.substr(start), start_line);
  return out;
}

}  // namespace

std::vector<common::StatusOr<boost::json::value>> ParseManifestDocumentsEach(
    std::string_view text, std::string_view source) {
  std::vector<common::StatusOr<boost::json::value>> out;
  if (LooksLikeJson(text)) {
    common::StatusOr<std::vector<json::value>> docs = ParseManifestDocuments(text, source);
    if (!docs.ok()) {
      out.emplace_back(std::move(docs).status());
      return out;
    }
    for (json::value& d : *docs) out.emplace_back(std::move(d));
    return out;
  }
  for (const auto& [chunk, first_line] : SplitYamlDocuments(text)) {
    common::StatusOr<std::vector<json::value>> docs = ParseYamlDocuments(chunk, source, first_line);
    if (!docs.ok()) {
      out.emplace_back(std::move(docs).status());
      continue;
    }
    for (json::value& d : *docs) out.emplace_back(std::move(d));
  }
  return out;
}

common::StatusOr<std::vector<boost::json::value>> ParseManifestDocuments(std::string_view text,
                                                                         std::string_view source) {
  std::vector<json::value> docs;
  Status json_error;
  if (LooksLikeJson(text)) {
    auto v = ParseJson(text, source);
    if (v.ok()) {
      if (json::array* a = v->if_array()) {
        docs.assign(std::make_move_iterator(a->begin()), std::make_move_iterator(a->end()));
      } else {
        docs.push_back(std::move(*v));
      }
    } else {
      json_error = std::move(v).status();
    }
  }
  if (docs.empty()) {
    // YAML (a flow-style YAML document may look like JSON). When JSON-looking text is neither,
    // the JSON error is the more useful one.
    auto yaml = ParseYamlDocuments(text, source);
    if (!yaml.ok()) return json_error.ok() ? std::move(yaml).status() : json_error;
    docs = std::move(*yaml);
  }
  return docs;
}

common::StatusOr<std::vector<Object>> DecodeManifestDocument(boost::json::value& document) {
  std::vector<Object> out;
  GPUSCHED_RETURN_IF_ERROR(DecodeDocument(document, &out, 0));
  return out;
}

common::StatusOr<std::vector<Object>> DecodeManifests(std::string_view text,
                                                      std::string_view source) {
  GPUSCHED_ASSIGN_OR_RETURN(std::vector<json::value> docs, ParseManifestDocuments(text, source));
  std::vector<Object> out;
  out.reserve(docs.size());
  for (size_t i = 0; i < docs.size(); ++i) {
    Status s = DecodeDocument(docs[i], &out, 0);
    if (!s.ok()) {
      return s.WithContext(std::string(source) + ": document " + std::to_string(i + 1));
    }
  }
  return out;
}

}  // namespace gpusched::api
