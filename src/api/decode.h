// SPDX-License-Identifier: Apache-2.0
// Decoders from Kubernetes JSON (API server responses, watch events) and from YAML manifests
// (multi-document) into the compact model in types.h. One code path: YAML is converted to a JSON
// value first, then decoded by the same functions.
//
// Errors name the object, the field path and the value, e.g.
//   pod default/train-1: spec.containers[0].resources.limits.cpu: invalid quantity "1.2.3"
// The decoders read the whole object and collect every error (JsonReader, fields.h): DecodePod
// and DecodeNode return the first, in document order; PodErrors and NodeErrors list them all.
// Unknown fields are ignored (as a client of a newer API server must). Malformed GPU annotations
// are NOT decode errors: they land in Pod::gpu_error so the pod is reported, not dropped.
// No function here throws.
//
// Decoding applies the API server's defaults that the scheduler depends on: a pod without
// metadata.namespace is in "default" (as kubectl applies a manifest), schedulerName defaults to
// "default-scheduler", and a container resource with a limit but no request is requested at its
// limit. null is the same as an absent field. Quantities may be JSON numbers (YAML "cpu: 2").
// A null labelSelector in a pod affinity term or spread constraint matches nothing
// (LabelSelector::Nothing()). Thread-safe: the functions share only the interner.
#pragma once

#include <boost/json/storage_ptr.hpp>
#include <boost/json/value.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "src/api/types.h"
#include "src/common/status.h"

namespace gpusched::api {

common::StatusOr<Pod> DecodePod(const boost::json::value& json);
common::StatusOr<Node> DecodeNode(const boost::json::value& json);
// policy/v1 PodDisruptionBudget: metadata (namespace defaults to "default"), spec.selector (a
// selector that does not decode is an error naming its field), status.disruptionsAllowed (0 to
// 2^31-1) and the names of status.disruptedPods (each value an RFC 3339 time). Errors read
//   poddisruptionbudget ml/web: spec.selector.matchExpressions[0].operator: invalid value ...
common::StatusOr<PodDisruptionBudget> DecodePodDisruptionBudget(const boost::json::value& json);
// scheduling.k8s.io/v1 PriorityClass: metadata.name, value (int32), globalDefault,
// preemptionPolicy (PreemptLowerPriority when absent, or Never). Errors name
// "priorityclass <name>".
common::StatusOr<PriorityClass> DecodePriorityClass(const boost::json::value& json);

// A workload controller (apps/v1 Deployment, ReplicaSet, StatefulSet, DaemonSet; batch/v1 Job)
// as the add-ons read it: no scheduler models one, so it is not an Object kind.
struct WorkloadController {
  std::string kind;                 // as written: "Deployment", ...
  ObjectMeta meta;                  // namespace "default" when absent
  std::optional<int32_t> replicas;  // spec.replicas (0 to 2^31-1); nullopt when unset
  LabelSelector selector;           // spec.selector; absent or null matches nothing, {} everything
  Pod pod_template;                 // spec.template: its metadata and spec, requests as a Pod's
};
// Decodes a workload controller of any of those kinds (another kind is an error). Errors name the
// object and field, e.g.
//   deployment ml/web: spec.template.spec.containers[0].resources.requests.cpu: invalid quantity
//   "x": ...
common::StatusOr<WorkloadController> DecodeWorkloadController(const boost::json::value& json);
// v1.NodeAffinity (required and preferred node selector terms) at `path`, e.g. a NodeAffinity
// plugin's addedAffinity: every error of it, each "path.<field>: why" as a Pod's reads
// ("addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].
// matchExpressions[0].operator: invalid value ..."), joined by "; ".
common::StatusOr<NodeAffinity> DecodeNodeAffinity(const boost::json::value& json,
                                                  std::string_view path);
// metav1.LabelSelector (matchLabels, matchExpressions with In, NotIn, Exists, DoesNotExist);
// errors name the field below the selector ("matchExpressions[0].values: ...").
common::StatusOr<LabelSelector> DecodeLabelSelector(const boost::json::value& json);
// Every error of the object, each as DecodePod / DecodeNode would report it, in document order;
// empty when it decodes.
std::vector<std::string> PodErrors(const boost::json::value& json);
std::vector<std::string> NodeErrors(const boost::json::value& json);

// metadata.<key> of a Kubernetes object when it is a string, else "" (absent, null, malformed):
// a peek at a name or resourceVersion without decoding the object (informer keys, list and watch
// resource versions).
std::string_view MetaString(const boost::json::value& object, std::string_view key);
// The top-level string member `key` of a document (kind, apiVersion), else "", as MetaString.
std::string_view PeekString(const boost::json::value& object, std::string_view key);

// One page of a list response (v1.List, PodList, ...): its items, moved out of the document, and
// metadata.continue and metadata.resourceVersion ("" when absent).
struct ListPage {
  std::vector<boost::json::value> items;
  std::string continue_token;
  std::string resource_version;
};
// InvalidArgument "source: ..." when `list` is not an object or its items or metadata are of the
// wrong type. `list` is left with its items moved out.
common::StatusOr<ListPage> TakeListPage(boost::json::value& list, std::string_view source);

// Parses an RFC 3339 time (metav1.Time / MicroTime): optional fraction, Z or ±hh:mm offset.
// nullopt when malformed.
std::optional<common::TimePoint> ParseRfc3339(std::string_view s);

// Parses JSON text; the error names `source` (file name or "response") and the offset. The value
// allocates from `storage` (default: the heap); a non-owning storage must outlive it.
common::StatusOr<boost::json::value> ParseJson(std::string_view text, std::string_view source,
                                               boost::json::storage_ptr storage = {});

// Parses one JSON document after another (watch events) with next to no allocation: the
// parser's buffers and an arena for the values (`arena_bytes` up front, growing when a document
// needs more) are kept between calls. What Parse returns lives until the next Parse or the
// destruction of this object. Errors as ParseJson's. Not thread-safe.
class JsonParser {
 public:
  explicit JsonParser(size_t arena_bytes = size_t{64} << 10);
  ~JsonParser();
  JsonParser(const JsonParser&) = delete;
  JsonParser& operator=(const JsonParser&) = delete;
  common::StatusOr<const boost::json::value*> Parse(std::string_view text, std::string_view source);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Converts YAML documents to JSON values (mappings -> objects, sequences -> arrays, plain scalars
// typed as YAML 1.2 core schema: null, true/false, integers, floats, else strings; quoted
// scalars stay strings). Empty documents are skipped. Errors name `source` and line:column, the
// lines counted from `first_line` (the line `text` starts at in the file).
common::StatusOr<std::vector<boost::json::value>> ParseYamlDocuments(std::string_view text,
                                                                     std::string_view source,
                                                                     int first_line = 1);

// An object of a kind the decoder does not model (Deployment, ConfigMap, ...; also a
// PodDisruptionBudget or PriorityClass of another apiVersion than policy/v1 and
// scheduling.k8s.io/v1): kept by kind and name so callers can report or ignore it. `List` kinds
// (v1 List, PodList, NodeList) are expanded.
struct OtherObject {
  std::string api_version;
  std::string kind;
  std::string name;
  boost::json::value json;
};
using Object = std::variant<Pod, Node, PodDisruptionBudget, PriorityClass, OtherObject>;

// Decodes every document of a multi-document YAML (or JSON) manifest. The first error stops the
// decode and names `source`, the document number (from 1) and the field, e.g.
//   trace.yaml: document 3: pod default/a: spec.containers[0].resources.requests.cpu: ...
// Text that starts with '{' or '[' is read as JSON (a top-level array is a list of documents),
// falling back to YAML; `items` of v1 List, PodList, NodeList, ... are expanded in place (items of
// a typed list may omit their kind).
common::StatusOr<std::vector<Object>> DecodeManifests(std::string_view text,
                                                      std::string_view source);

}  // namespace gpusched::api
