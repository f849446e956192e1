// SPDX-License-Identifier: Apache-2.0
// metrics::Registry: a small thread-safe registry of Prometheus metric families — counters,
// gauges and histograms with label sets — plus callback families whose samples are produced at
// scrape time (queue lengths, cache sizes, GPU allocation read from their owners).
//
//   Registry r;
//   CounterFamily& f = r.AddCounter("scheduler_schedule_attempts_total", "help", {"result",
//   "profile"}); Counter* c = f.With({"scheduled", "gpu-scheduler"});   // resolve once (map
//   lookup, allocation) c->Inc();                                              // hot path: one
//   relaxed atomic op
//
// Hot path: With() is the only call that looks up or allocates; callers resolve series handles
// once (at construction) and keep the raw pointer. A series lives as long as its registry, so the
// pointer never dangles. Inc/Add/Set/Observe are lock-free atomic operations.
//
// Exposition (exposition.h) walks the registry under its mutex; callback families run their
// callback then, on the scraping thread.
//
// Thread safety: every method is thread-safe. Registration (Add*) normally happens at start-up;
// a duplicate or invalid name or label name is a programmer error and fails GPUSCHED_CHECK.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/mutex.h"

namespace gpusched::metrics {

enum class Type : uint8_t { kCounter, kGauge, kHistogram };
std::string_view TypeName(Type t);  // "counter", "gauge", "histogram"

// A monotonically increasing value.
class Counter {
 public:
  void Inc() { Add(1); }
  // REQUIRES: v >= 0 (a negative value is ignored).
  void Add(double v) {
    if (v > 0) value_.fetch_add(v, std::memory_order_relaxed);
  }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// A value that goes up and down.
class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double v) { value_.fetch_add(v, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Cumulative buckets with upper bounds `bounds` (sorted, +Inf implied), a sum and a count.
// Observe: a binary search over the bounds and three relaxed atomic adds; no allocation.
class Histogram {
 public:
  explicit Histogram(std::span<const double> bounds);
  void Observe(double v);

  struct Data {
    std::vector<uint64_t> cumulative;  // per bound, then +Inf (== count)
    double sum = 0;
    uint64_t count = 0;
  };
  // A consistent-enough copy for exposition (each field read atomically).
  Data Read() const;
  std::span<const double> bounds() const { return bounds_; }

 private:
  std::span<const double> bounds_;                    // owned by the family
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // bounds_.size() + 1 (non-cumulative)
  std::atomic<double> sum_{0};
  std::atomic<uint64_t> count_{0};
};

// Buckets start × factor^i for i = 0..n−1 (Prometheus' ExponentialBuckets). REQUIRES: start > 0,
// factor > 1, n >= 1.
std::vector<double> ExponentialBuckets(double start, double factor, int n);

// One metric family: name, help, label names and its series by label values.
template <typename Series>
class Family {
 public:
  // The series for `values` (one per label name, in order), created on first use. The pointer
  // stays valid for the registry's lifetime. A wrong number of values is a programmer error.
  Series* With(const std::vector<std::string>& values);

  const std::string& name() const { return name_; }

 private:
  friend class Registry;
  Family(std::string name, std::string help, std::vector<std::string> labels,
         std::vector<double> bounds = {})
      : name_(std::move(name)),
        help_(std::move(help)),
        labels_(std::move(labels)),
        bounds_(std::move(bounds)) {}

  std::string name_;
  std::string help_;
  std::vector<std::string> labels_;
  std::vector<double> bounds_;  // histograms only
  mutable common::Mutex mu_;
  // Ordered by label values, so the exposition is stable.
  std::map<std::vector<std::string>, std::unique_ptr<Series>> series_ GPUSCHED_GUARDED_BY(mu_);
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

// One sample produced by a callback family: label values (one per label name) and the value.
struct Sample {
  std::vector<std::string> label_values;
  double value = 0;
};
// Fills `out` with the family's current samples; runs on the scraping thread at exposition time
// and must be thread-safe with respect to what it reads.
using CollectFn = std::function<void(std::vector<Sample>& out)>;

// A family in exposition form (what exposition.cc and tests read).
struct FamilySnapshot {
  std::string name;
  std::string help;
  Type type = Type::kCounter;
  std::vector<std::string> label_names;
  struct Series {
    std::vector<std::string> label_values;
    double value = 0;           // counter, gauge
    Histogram::Data histogram;  // histogram
  };
  std::vector<double> bounds;  // histogram
  std::vector<Series> series;
};

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  CounterFamily& AddCounter(std::string name, std::string help,
                            std::vector<std::string> labels = {});
  GaugeFamily& AddGauge(std::string name, std::string help, std::vector<std::string> labels = {});
  // REQUIRES: bounds sorted strictly increasing, finite.
  HistogramFamily& AddHistogram(std::string name, std::string help, std::vector<std::string> labels,
                                std::vector<double> bounds);
  // A counter or gauge family whose samples `collect` produces at scrape time.
  void AddCallback(std::string name, std::string help, Type type, std::vector<std::string> labels,
                   CollectFn collect);

  // Every family, in registration order, with its current values (callbacks run now).
  std::vector<FamilySnapshot> Gather() const;
  // The registered family names, sorted (the metric catalog).
  std::vector<std::string> Names() const;

  // True for [a-zA-Z_:][a-zA-Z0-9_:]* (metric) / [a-zA-Z_][a-zA-Z0-9_]* not starting "__" (label).
  static bool ValidMetricName(std::string_view name);
  static bool ValidLabelName(std::string_view name);

 private:
  struct Entry {
    Type type;
    std::unique_ptr<CounterFamily> counter;
    std::unique_ptr<GaugeFamily> gauge;
    std::unique_ptr<HistogramFamily> histogram;
    // Callback family.
    std::string name, help;
    std::vector<std::string> labels;
    CollectFn collect;
  };
  void CheckNewLocked(const std::string& name, const std::vector<std::string>& labels) const
      GPUSCHED_REQUIRES(mu_);

  mutable common::Mutex mu_;
  std::deque<Entry> entries_ GPUSCHED_GUARDED_BY(mu_);
};

}  // namespace gpusched::metrics
