// SPDX-License-Identifier: Apache-2.0
// Reflector: keeps a local copy of one collection of the API server (all pods, all nodes) up to
// date with the list/watch protocol, as client-go's reflector does. It speaks raw JSON and knows
// nothing about object types: what it lists and watches goes to a ReflectorSink (the Informer,
// which decodes, stores, diffs and notifies).
//
// State machine (one Step() = one arrow out of List or Watch):
//
//        ┌──────────────────────── error: backoff (800 ms doubling to 30 s) ───────┐
//        v                                                                         │
//   ┌─> List ── LIST ?limit=500[&continue=…] (pages of one consistent snapshot) ──┤
//   │     │  all pages OK: sink.Replace(items, list RV)                             │
//   │     v                                                                          │
//   │   Watch ── WATCH ?watch=1&allowWatchBookmarks=true&resourceVersion=RV          │
//   │     │          &timeoutSeconds=300..600 (random)                               │
//   │     │  ADDED/MODIFIED/DELETED: sink.Apply, RV = object's RV                    │
//   │     │  BOOKMARK: RV = bookmark's RV                                            │
//   │     │  malformed line: logged, skipped                                         │
//   │     ├── stream ended (server timeout, connection closed): Watch again from RV ─┘
//   │     │     (at once; after a backoff when it ended within 1 s with no event, or
//   │     │      on a transport/HTTP error)
//   └─────┴── 410 Gone (HTTP status, or an ERROR event with code 410): Relist = List
//
// On a relist the sink receives the complete new state and computes the differences itself, so
// every deletion that happened while the watch was gone is still reported.
//
// Assumptions: the collection path supports list pagination and watch bookmarks (every API
// server since 1.17); resourceVersions are opaque strings and are never compared.
//
// Threading: Step() and Run() are called from one thread (the informer's); Stop() from any
// thread. The sink is called on the Run()/Step() thread only. Stop() makes Run() return after the
// request in progress: a watch stream ends at its next line or when the server closes it (at the
// latest after timeoutSeconds), a backoff wait ends at once.
#pragma once

#include <atomic>
#include <boost/json/fwd.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/decode.h"
#include "src/common/backoff.h"
#include "src/common/clock.h"
#include "src/common/mutex.h"
#include "src/common/random.h"
#include "src/common/status.h"
#include "src/kube/rest_client.h"

namespace gpusched::kube::informer {

enum class EventType : uint8_t { kAdded, kModified, kDeleted };

// Receives what the reflector lists and watches. Called on the reflector's thread only. The JSON
// handed over lives in the reflector's arenas and is valid only during the call: a sink decodes
// what it keeps, and neither keeps nor copies the values (a copy would share the arena).
class ReflectorSink {
 public:
  virtual ~ReflectorSink() = default;
  // The complete collection at `resource_version` (first list and every relist). `items` are the
  // list's elements (objects, unchecked).
  virtual void Replace(std::vector<boost::json::value> items,
                       std::string_view resource_version) = 0;
  // One watch event. `object` is the event's object (unchecked).
  virtual void Apply(EventType type, const boost::json::value& object) = 0;
};

struct ReflectorOptions {
  std::string name = "objects";  // for log lines: "pods", "nodes"
  std::string path;              // the collection, e.g. "/api/v1/pods"; REQUIRES: non-empty
  std::string field_selector;    // e.g. "status.phase!=Succeeded,status.phase!=Failed"; "" = none
  std::string label_selector;    // "" = none
  int64_t page_size = 500;       // LIST limit; 0 = no pagination
  // The server-side watch timeout is drawn uniformly from [min, max] (whole seconds), so that
  // many clients do not reconnect at the same moment. client-go uses 5–10 min.
  common::Duration min_watch_timeout = std::chrono::minutes(5);
  common::Duration max_watch_timeout = std::chrono::minutes(10);
  // Backoff after an error: initial, doubling up to max, with up to +100 % jitter; reset by a
  // watch that delivered events or a successful list.
  common::Duration initial_backoff = std::chrono::milliseconds(800);
  common::Duration max_backoff = std::chrono::seconds(30);
  // A watch that ends sooner than this without one event counts as an error (backoff), so a
  // server that closes streams at once is not hammered.
  common::Duration min_watch_duration = std::chrono::seconds(1);
  std::chrono::milliseconds list_timeout{60000};  // per LIST page request
  uint64_t seed = 1;                              // for the watch timeout and the backoff jitter
};

class Reflector {
 public:
  enum class State : uint8_t { kList, kWatch, kStopped };

  // `client`, `sink` and `clock` are borrowed and must outlive the reflector.
  Reflector(RestClient& client, ReflectorSink& sink, const common::Clock& clock,
            ReflectorOptions options);
  Reflector(const Reflector&) = delete;
  Reflector& operator=(const Reflector&) = delete;

  // One transition: a (paginated) LIST when the state is List, else one WATCH until its stream
  // ends. Returns OK when the step succeeded (list delivered, or the stream ended normally), an
  // OutOfRange status when the resourceVersion expired (the state is List again), or the error.
  // Does not wait; Run() adds the backoff.
  common::Status Step();
  // Repeats Step() with the backoff above until Stop(). REQUIRES: not called concurrently.
  void Run();
  // Asks Run() to return; thread-safe, does not block.
  void Stop();

  bool stopping() const;
  State state() const;
  // The resourceVersion the next watch starts from ("" before the first list).
  std::string last_resource_version() const;
  // Lines that could not be parsed or had an unknown type, since construction.
  int64_t malformed_events() const;
  // The code of the last LIST's error (kOk before any and after a LIST that succeeded): kNotFound
  // when the server does not serve the collection (a CRD not installed, an API not enabled),
  // kPermissionDenied when the client may not list it. Thread-safe.
  common::StatusCode last_list_error() const;
  // The backoff Run() would wait after the next error, before jitter (for tests).
  common::Duration NextBackoffForTest() const {
    return common::ExponentialBackoff(options_.initial_backoff, options_.max_backoff,
                                      failures_.load(std::memory_order_relaxed) + 1);
  }

 private:
  common::Status List();
  common::Status Watch();
  // Handles one watch line; false stops the stream.
  bool OnLine(std::string_view line);
  void SetResourceVersion(std::string rv);
  // Waits up to `d` or until Stop().
  void Wait(common::Duration d);
  common::Duration Jittered(common::Duration d);

  RestClient& client_;
  ReflectorSink& sink_;
  const common::Clock& clock_;
  const ReflectorOptions options_;
  common::Random random_;  // used on the Run() thread only
  // Errors since the last success: written by the Run() thread, read by NextBackoffForTest too.
  std::atomic<int64_t> failures_{0};

  // Per-watch state, used on the Run() thread only.
  int64_t watch_events_ = 0;
  int consecutive_expiries_ = 0;  // 410s since the last watch that worked
  std::string last_error_;        // Run(): the same error again is logged at debug level
  bool watch_gone_ = false;
  common::Status watch_error_;
  api::JsonParser watch_parser_;  // one per stream: watch lines parse without allocating

  mutable common::Mutex mu_;
  std::condition_variable_any cv_;
  bool stopping_ GPUSCHED_GUARDED_BY(mu_) = false;
  State state_ GPUSCHED_GUARDED_BY(mu_) = State::kList;
  std::string resource_version_ GPUSCHED_GUARDED_BY(mu_);
  int64_t malformed_ GPUSCHED_GUARDED_BY(mu_) = 0;
  common::StatusCode last_list_error_ GPUSCHED_GUARDED_BY(mu_) = common::StatusCode::kOk;
};

// True when `status` says the resourceVersion is too old (HTTP 410 Gone, "Expired").
bool IsResourceExpired(const common::Status& status);

}  // namespace gpusched::kube::informer
