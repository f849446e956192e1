// SPDX-License-Identifier: Apache-2.0
#include "src/metrics/registry.h"

#include <algorithm>
#include <cmath>

#include "src/common/check.h"

namespace gpusched::metrics {

std::string_view TypeName(Type t) {
  switch (t) {
    case Type::kCounter: return "counter";
    case Type::kGauge: return "gauge";
    case Type::kHistogram: return "histogram";
  }
  return "untyped";
}

Histogram::Histogram(std::span<const double> bounds)
    : bounds_(bounds), buckets_(new std::atomic<uint64_t>[bounds.size() + 1]) {
  for (size_t i = 0; i <= bounds.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double v) {
  // First bound >= v ("le"); NaN lands in +Inf.
  size_t i =
      static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  if (std::isnan(v)) i = bounds_.size();
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

Histogram::Data Histogram::Read() const {
  Data d;
  d.cumulative.resize(bounds_.size() + 1);
  uint64_t acc = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    acc += buckets_[i].load(std::memory_order_relaxed);
    d.cumulative[i] = acc;
  }
  // Count is the +Inf bucket, so the exposition is self-consistent even during observations.
  d.count = acc;
  d.sum = sum_.load(std::memory_order_relaxed);
  return d;
}

std::vector<double> ExponentialBuckets(double start, double factor, int n) {
  GPUSCHED_CHECK(start > 0 && factor > 1 && n >= 1);
  std::vector<double> out;
  out.reserve(static_cast<size_t>(n));
  double v = start;
  for (int i = 0; i < n; ++i) {
    out.push_back(v);
    v *= factor;
  }
  return out;
}

template <typename Series>
Series* Family<Series>::With(const std::vector<std::string>& values) {
  GPUSCHED_CHECK(values.size() == labels_.size());
  common::MutexLock l(mu_);
  auto it = series_.find(values);
  if (it != series_.end()) return it->second.get();
  std::unique_ptr<Series> s;
  if constexpr (std::is_same_v<Series, Histogram>) {
    s = std::make_unique<Histogram>(std::span<const double>(bounds_));
  } else {
    s = std::make_unique<Series>();
  }
  Series* raw = s.get();
  series_.emplace(values, std::move(s));
  return raw;
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

bool Registry::ValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

bool Registry::ValidLabelName(std::string_view name) {
  if (name.empty() || name.starts_with("__")) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

void Registry::CheckNewLocked(const std::string& name,
                              const std::vector<std::string>& labels) const {
  GPUSCHED_CHECK(ValidMetricName(name));
  for (const auto& l : labels) GPUSCHED_CHECK(ValidLabelName(l) && l != "le");
  for (const auto& e : entries_) {
    const std::string* n = e.counter     ? &e.counter->name()
                           : e.gauge     ? &e.gauge->name()
                           : e.histogram ? &e.histogram->name()
                                         : &e.name;
    GPUSCHED_CHECK(*n != name);
  }
}

CounterFamily& Registry::AddCounter(std::string name, std::string help,
                                    std::vector<std::string> labels) {
  common::MutexLock l(mu_);
  CheckNewLocked(name, labels);
  Entry& e = entries_.emplace_back();
  e.type = Type::kCounter;
  e.counter.reset(new CounterFamily(std::move(name), std::move(help), std::move(labels)));
  return *e.counter;
}

GaugeFamily& Registry::AddGauge(std::string name, std::string help,
                                std::vector<std::string> labels) {
  common::MutexLock l(mu_);
  CheckNewLocked(name, labels);
  Entry& e = entries_.emplace_back();
  e.type = Type::kGauge;
  e.gauge.reset(new GaugeFamily(std::move(name), std::move(help), std::move(labels)));
  return *e.gauge;
}

HistogramFamily& Registry::AddHistogram(std::string name, std::string help,
                                        std::vector<std::string> labels,
                                        std::vector<double> bounds) {
  GPUSCHED_CHECK(!bounds.empty());
  for (size_t i = 0; i < bounds.size(); ++i) {
    GPUSCHED_CHECK(std::isfinite(bounds[i]) && (i == 0 || bounds[i] > bounds[i - 1]));
  }
  common::MutexLock l(mu_);
  CheckNewLocked(name, labels);
  Entry& e = entries_.emplace_back();
  e.type = Type::kHistogram;
  e.histogram.reset(
      new HistogramFamily(std::move(name), std::move(help), std::move(labels), std::move(bounds)));
  return *e.histogram;
}

void Registry::AddCallback(std::string name, std::string help, Type type,
                           std::vector<std::string> labels, CollectFn collect) {
  GPUSCHED_CHECK(type != Type::kHistogram && collect != nullptr);
  common::MutexLock l(mu_);
  CheckNewLocked(name, labels);
  Entry& e = entries_.emplace_back();
  e.type = type;
  e.name = std::move(name);
  e.help = std::move(help);
  e.labels = std::move(labels);
  e.collect = std::move(collect);
}

namespace {

template <typename Series, typename Fill>
void SnapshotFamily(Family<Series>& f, const std::string& name, const std::string& help,
                    const std::vector<std::string>& labels,
                    const std::map<std::vector<std::string>, std::unique_ptr<Series>>& series,
                    FamilySnapshot& out, Fill fill) {
  (void)f;
  out.name = name;
  out.help = help;
  out.label_names = labels;
  for (const auto& [values, s] : series) {
    FamilySnapshot::Series fs;
    fs.label_values = values;
    fill(*s, fs);
    out.series.push_back(std::move(fs));
  }
}

}  // namespace

std::vector<FamilySnapshot> Registry::Gather() const {
  // Callbacks run outside the registry lock (they may take their owners' locks).
  std::vector<const Entry*> entries;
  {
    common::MutexLock l(mu_);
    for (const auto& e : entries_) entries.push_back(&e);  // deque: stable addresses
  }
  std::vector<FamilySnapshot> out;
  out.reserve(entries.size());
  for (const Entry* e : entries) {
    FamilySnapshot fs;
    fs.type = e->type;
    if (e->counter) {
      CounterFamily& f = *e->counter;
      common::MutexLock l(f.mu_);
      SnapshotFamily(f, f.name_, f.help_, f.labels_, f.series_, fs,
                     [](const Counter& c, FamilySnapshot::Series& s) { s.value = c.Value(); });
    } else if (e->gauge) {
      GaugeFamily& f = *e->gauge;
      common::MutexLock l(f.mu_);
      SnapshotFamily(f, f.name_, f.help_, f.labels_, f.series_, fs,
                     [](const Gauge& g, FamilySnapshot::Series& s) { s.value = g.Value(); });
    } else if (e->histogram) {
      HistogramFamily& f = *e->histogram;
      common::MutexLock l(f.mu_);
      fs.bounds = f.bounds_;
      SnapshotFamily(f, f.name_, f.help_, f.labels_, f.series_, fs,
                     [](const Histogram& h, FamilySnapshot::Series& s) { s.histogram = h.Read(); });
    } else {
      fs.name = e->name;
      fs.help = e->help;
      fs.label_names = e->labels;
      std::vector<Sample> samples;
      e->collect(samples);
      std::sort(samples.begin(), samples.end(),
                [](const Sample& a, const Sample& b) { return a.label_values < b.label_values; });
      for (auto& s : samples) {
        if (s.label_values.size() != e->labels.size()) continue;  // a buggy callback: drop
        FamilySnapshot::Series series;
        series.label_values = std::move(s.label_values);
        series.value = s.value;
        fs.series.push_back(std::move(series));
      }
    }
    out.push_back(std::move(fs));
  }
  return out;
}

std::vector<std::string> Registry::Names() const {
  std::vector<std::string> out;
  common::MutexLock l(mu_);
  for (const auto& e : entries_) {
    out.push_back(e.counter     ? e.counter->name()
                  : e.gauge     ? e.gauge->name()
                  : e.histogram ? e.histogram->name()
                                : e.name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace gpusched::metrics
