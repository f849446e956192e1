// SPDX-License-Identifier: Apache-2.0
// Private to the runtime: timers for kube-scheduler's framework metrics. PointTimer times one
// extension point; PluginTimer counts one plugin evaluation and times it in sampled cycles. Both
// read no clock when metrics are off. Done(s) records and returns `s`; Record(s) only records.
#pragma once

#include <optional>

#include "src/framework/status.h"
#include "src/metrics/scheduler_metrics.h"

namespace gpusched::framework::runtime {

inline metrics::StatusLabel LabelOf(const Status& s) {
  return static_cast<metrics::StatusLabel>(s.code());
}

class PointTimer {
 public:
  PointTimer(metrics::ProfileMetrics* m, metrics::Point p) : m_(m), p_(p) {
    if (m_ != nullptr) sw_.emplace();
  }
  void Record(const Status& s) {
    if (m_ != nullptr && sw_) m_->ObserveExtensionPoint(p_, LabelOf(s), sw_->Seconds());
    sw_.reset();
  }
  Status Done(Status s) {
    Record(s);
    return s;
  }

 private:
  metrics::ProfileMetrics* m_;
  metrics::Point p_;
  std::optional<metrics::Stopwatch> sw_;
};

class PluginTimer {
 public:
  PluginTimer(metrics::PluginMetrics* m, bool sample) : m_(m) {
    if (m_ != nullptr && sample) sw_.emplace();
  }
  void Record(const Status& s) {
    if (m_ == nullptr) return;
    m_->CountEvaluations(1);
    if (sw_) m_->ObserveExecution(LabelOf(s), sw_->Seconds());
  }
  Status Done(Status s) {
    Record(s);
    return s;
  }

 private:
  metrics::PluginMetrics* m_;
  std::optional<metrics::Stopwatch> sw_;
};

}  // namespace gpusched::framework::runtime
