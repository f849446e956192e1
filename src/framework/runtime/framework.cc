// SPDX-License-Identifier: Apache-2.0
#include "src/framework/runtime/framework.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/equivalence.h"
#include "src/common/strings.h"
#include "src/framework/reasons.h"
#include "src/framework/runtime/plugin_names.h"
#include "src/framework/runtime/timers.h"

namespace gpusched::framework::runtime {

namespace {

bool Implements(Plugin* p, config::Point point) {
  switch (point) {
    case config::Point::kQueueSort: return dynamic_cast<QueueSortPlugin*>(p) != nullptr;
    case config::Point::kPreFilter: return dynamic_cast<PreFilterPlugin*>(p) != nullptr;
    case config::Point::kFilter: return dynamic_cast<FilterPlugin*>(p) != nullptr;
    case config::Point::kPostFilter: return dynamic_cast<PostFilterPlugin*>(p) != nullptr;
    case config::Point::kPreScore: return dynamic_cast<PreScorePlugin*>(p) != nullptr;
    case config::Point::kScore: return dynamic_cast<ScorePlugin*>(p) != nullptr;
    case config::Point::kReserve: return dynamic_cast<ReservePlugin*>(p) != nullptr;
    case config::Point::kPermit: return dynamic_cast<PermitPlugin*>(p) != nullptr;
    case config::Point::kPreBind: return dynamic_cast<PreBindPlugin*>(p) != nullptr;
    case config::Point::kBind: return dynamic_cast<BindPlugin*>(p) != nullptr;
    case config::Point::kPostBind: return dynamic_cast<PostBindPlugin*>(p) != nullptr;
    default: return false;
  }
}

}  // namespace

std::string Diagnosis::Message() const {
  std::string msg = "0/" + std::to_string(num_nodes) + " nodes are available:";
  if (!pre_filter_status.ok()) {
    msg += " ";
    msg += pre_filter_status.reason();
    msg += ".";
  } else {
    // Each reason of a multi-reason status counts on its own (reasons.h), as upstream's.
    std::map<std::string_view, int32_t> counts;
    for (const auto& [reason, count] : reason_counts) {
      ForEachReason(reason, [&counts, n = count](std::string_view r) { counts[r] += n; });
    }
    std::vector<std::string> items;
    items.reserve(counts.size());
    for (const auto& [reason, count] : counts) {
      items.push_back(std::to_string(count) + " " + std::string(reason));
    }
    std::sort(items.begin(), items.end());
    if (!items.empty()) {
      msg += " ";
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) msg += ", ";
        msg += items[i];
      }
      msg += ".";
    }
  }
  // As upstream: the PostFilter messages, joined, after a space (preemption's own message is a
  // FitError of its own and ends with its period).
  if (!post_filter_messages.empty()) {
    msg += " ";
    for (size_t i = 0; i < post_filter_messages.size(); ++i) {
      if (i > 0) msg += ", ";
      msg += post_filter_messages[i];
    }
  }
  return msg;
}

common::StatusOr<std::unique_ptr<Framework>> Framework::Create(const config::Profile& profile,
                                                               int32_t default_percentage,
                                                               const Registry& registry,
                                                               Handle& handle) {
  // Every name first, through the check a command runs on a config file (the same errors).
  GPUSCHED_RETURN_IF_ERROR(CheckPluginNames(profile, registry));
  auto fw = CreateFromProfile(profile, default_percentage, registry, handle);
  if (fw.ok() || profile.source.empty()) return fw;
  return fw.status().WithContext(profile.source);
}

common::StatusOr<std::unique_ptr<Framework>> Framework::CreateFromProfile(
    const config::Profile& profile, int32_t default_percentage, const Registry& registry,
    Handle& handle) {
  std::unique_ptr<Framework> fw(new Framework());
  fw->handle_ = &handle;
  fw->scheduler_name_ = profile.scheduler_name;
  fw->percentage_ = profile.percentage_of_nodes_to_score.value_or(default_percentage);

  std::map<std::string, Plugin*, std::less<>> instances;
  common::Status first_error;
  // Returns the plugin named `name`, creating it on first use; nullptr with first_error set if
  // its args are invalid (or it is unknown, which CheckPluginNames has ruled out).
  auto get = [&](std::string_view requested, std::string_view path) -> Plugin* {
    std::string_view name = registry.Canonical(requested);
    if (auto it = instances.find(name); it != instances.end()) return it->second;
    const PluginFactory* factory = registry.Find(name);
    if (factory == nullptr) {
      if (first_error.ok()) {
        first_error = UnknownPluginError(registry, path, requested);
      }
      return nullptr;
    }
    static const boost::json::value kEmptyArgs = boost::json::object();
    const config::PluginConfig* pc = profile.ConfigFor(name);
    if (pc == nullptr) pc = profile.ConfigFor(requested);
    auto created = (*factory)(pc != nullptr ? pc->args : kEmptyArgs, handle);
    if (!created.ok()) {
      if (first_error.ok()) {
        first_error = created.status().WithContext(pc != nullptr && !pc->path.empty()
                                                       ? pc->path + ".args"
                                                       : profile.path + ".pluginConfig[" +
                                                             std::string(name) + "].args");
      }
      return nullptr;
    }
    Plugin* raw = created->get();
    fw->owned_.push_back(std::move(created).value());
    instances.emplace(std::string(name), raw);
    return raw;
  };

  // Every name is registered (CheckPluginNames).
  config::Plugins effective =
      config::EffectivePlugins(profile, [&](std::string_view name, config::Point point) {
        if (registry.Find(name) == nullptr) return false;
        Plugin* p = get(name, profile.path + ".plugins.multiPoint");
        return p != nullptr && Implements(p, point);
      });
  GPUSCHED_RETURN_IF_ERROR(first_error);
  GPUSCHED_RETURN_IF_ERROR(fw->AddPluginsAtPoints(profile, effective, get, first_error));
  GPUSCHED_RETURN_IF_ERROR(fw->CheckProfile(profile));
  fw->MapSkipSlots();
  fw->CollectQueueingHints();
  return fw;
}

// Every point's enabled plugins, in order (an alias and its plugin at one point run once).
common::Status Framework::AddPluginsAtPoints(
    const config::Profile& profile, const config::Plugins& effective,
    const std::function<Plugin*(std::string_view, std::string_view)>& get,
    const common::Status& first_error) {
  for (int pi = 0; pi < static_cast<int>(config::Point::kCount); ++pi) {
    auto point = static_cast<config::Point>(pi);
    if (point == config::Point::kMultiPoint || point == config::Point::kPreEnqueue) continue;
    const auto& refs = effective.at(point).enabled;
    std::vector<Plugin*> seen;
    for (size_t k = 0; k < refs.size(); ++k) {
      const config::PluginRef& ref = refs[k];
      std::string path = ref.path.empty()
                             ? profile.path + ".plugins." + std::string(config::PointName(point)) +
                                   ".enabled[" + std::to_string(k) + "]"
                             : ref.path;
      Plugin* p = get(ref.name, path);
      GPUSCHED_RETURN_IF_ERROR(first_error);
      if (!Implements(p, point)) {
        return common::InvalidArgumentError(path + ": plugin \"" + ref.name +
                                            "\" does not implement " +
                                            std::string(config::PointName(point)));
      }
      if (std::find(seen.begin(), seen.end(), p) != seen.end()) continue;
      seen.push_back(p);
      GPUSCHED_RETURN_IF_ERROR(AddPlugin(point, p, ref, path));
    }
  }
  return common::Status::Ok();
}

common::Status Framework::AddPlugin(config::Point point, Plugin* p, const config::PluginRef& ref,
                                    const std::string& path) {
  switch (point) {
    case config::Point::kQueueSort:
      if (queue_sort_ != nullptr) {
        return common::InvalidArgumentError(path + ": only one queueSort plugin may be enabled");
      }
      queue_sort_ = dynamic_cast<QueueSortPlugin*>(p);
      break;
    case config::Point::kPreFilter: pre_filter_.push_back(dynamic_cast<PreFilterPlugin*>(p)); break;
    case config::Point::kFilter: filter_.push_back(dynamic_cast<FilterPlugin*>(p)); break;
    case config::Point::kPostFilter:
      post_filter_.push_back(dynamic_cast<PostFilterPlugin*>(p));
      break;
    case config::Point::kPreScore: pre_score_.push_back(dynamic_cast<PreScorePlugin*>(p)); break;
    case config::Point::kScore:
      score_.push_back(Scored{dynamic_cast<ScorePlugin*>(p), ref.weight > 0 ? ref.weight : 1});
      break;
    case config::Point::kReserve: reserve_.push_back(dynamic_cast<ReservePlugin*>(p)); break;
    case config::Point::kPermit: permit_.push_back(dynamic_cast<PermitPlugin*>(p)); break;
    case config::Point::kPreBind: pre_bind_.push_back(dynamic_cast<PreBindPlugin*>(p)); break;
    case config::Point::kBind: bind_.push_back(dynamic_cast<BindPlugin*>(p)); break;
    case config::Point::kPostBind: post_bind_.push_back(dynamic_cast<PostBindPlugin*>(p)); break;
    default: break;
  }
  return common::Status::Ok();
}

common::Status Framework::CheckProfile(const config::Profile& profile) const {
  if (queue_sort_ == nullptr) {
    return common::InvalidArgumentError(profile.path +
                                        ".plugins.queueSort: one queueSort plugin is required");
  }
  if (bind_.empty()) {
    return common::InvalidArgumentError(profile.path +
                                        ".plugins.bind: at least one bind plugin is required");
  }
  return common::Status::Ok();
}

// PreFilter/PreScore kSkip maps to the same plugin object's Filter/Score slot.
void Framework::MapSkipSlots() {
  for (auto* pf : pre_filter_) {
    int slot = -1;
    for (size_t j = 0; j < filter_.size(); ++j) {
      if (static_cast<Plugin*>(filter_[j]) == static_cast<Plugin*>(pf)) slot = static_cast<int>(j);
    }
    pre_filter_to_filter_.push_back(slot);
  }
  for (auto* ps : pre_score_) {
    int slot = -1;
    for (size_t j = 0; j < score_.size(); ++j) {
      if (static_cast<Plugin*>(score_[j].plugin) == static_cast<Plugin*>(ps))
        slot = static_cast<int>(j);
    }
    pre_score_to_score_.push_back(slot);
  }
}

Status Framework::RunPreFilter(CycleState& state, const api::Pod& pod, const Snapshot& snapshot) {
  PointTimer timer(metrics_, metrics::Point::kPreFilter);
  state.skip_filter().assign(filter_.size(), false);
  for (size_t i = 0; i < pre_filter_.size(); ++i) {
    PluginTimer pt(metrics_ ? m_pre_filter_[i] : nullptr, sample_plugins_);
    Status s = pt.Done(pre_filter_[i]->PreFilter(state, pod, snapshot));
    if (s.ok()) continue;
    if (s.IsSkip()) {
      if (pre_filter_to_filter_[i] >= 0)
        state.skip_filter()[static_cast<size_t>(pre_filter_to_filter_[i])] = true;
      continue;
    }
    s.WithPlugin(pre_filter_[i]->Name());
    return timer.Done(s);
  }
  return timer.Done(Status::Success());
}

Status Framework::RunFilter(const CycleState& state, const api::Pod& pod,
                            const NodeInfo& node) const {
  const auto& skip = state.skip_filter();
  for (size_t j = 0; j < filter_.size(); ++j) {
    if (j < skip.size() && skip[j]) continue;
    Status s = filter_[j]->Filter(state, pod, node);
    if (!s.ok()) {
      s.WithPlugin(filter_[j]->Name());
      return s;
    }
  }
  return Status::Success();
}

Status Framework::RunReserve(CycleState& state, const api::Pod& pod, const NodeInfo& node) {
  PointTimer timer(metrics_, metrics::Point::kReserve);
  for (size_t i = 0; i < reserve_.size(); ++i) {
    PluginTimer pt(metrics_ ? m_reserve_[i] : nullptr, sample_plugins_);
    Status s = pt.Done(reserve_[i]->Reserve(state, pod, node));
    if (!s.ok()) {
      s.WithPlugin(reserve_[i]->Name());
      timer.Record(s);
      RunUnreserve(state, pod, node.name());
      return s;
    }
  }
  return timer.Done(Status::Success());
}

void Framework::RunUnreserve(CycleState& state, const api::Pod& pod, std::string_view node) {
  PointTimer timer(metrics_, metrics::Point::kUnreserve);
  for (auto it = reserve_.rbegin(); it != reserve_.rend(); ++it) (*it)->Unreserve(state, pod, node);
  timer.Record(Status::Success());
}

Status Framework::RunPermit(CycleState& state, const api::PodPtr& pod, std::string_view node) {
  PointTimer timer(metrics_, metrics::Point::kPermit);
  std::vector<WaitingPodMap::Hold> holds;
  const common::TimePoint now = handle_->clock().Now();
  for (size_t i = 0; i < permit_.size(); ++i) {
    PermitPlugin* p = permit_[i];
    common::Duration timeout{0};
    PluginTimer pt(metrics_ ? m_permit_[i] : nullptr, sample_plugins_);
    Status s = pt.Done(p->Permit(state, *pod, node, &timeout));
    if (s.ok()) continue;
    s.WithPlugin(p->Name());
    if (!s.IsWait()) return timer.Done(s);
    holds.push_back({p->Name(), now + std::min(timeout, kMaxPermitWait)});
  }
  if (holds.empty()) return timer.Done(Status::Success());
  if (waiting_ == nullptr) {
    return timer.Done(
        Status::Error("plugin " + std::string(holds.front().plugin) +
                      " asked to wait at Permit, but this framework has no waiting pods"));
  }
  waiting_->Add(pod, std::string(node), std::move(holds), now);
  return timer.Done(Status::Wait());
}

Status Framework::RunPreBind(CycleState& state, const api::Pod& pod, std::string_view node) {
  PointTimer timer(metrics_, metrics::Point::kPreBind);
  for (auto* p : pre_bind_) {
    Status s = p->PreBind(state, pod, node);
    if (!s.ok()) {
      s.WithPlugin(p->Name());
      return timer.Done(s);
    }
  }
  return timer.Done(Status::Success());
}

Status Framework::RunBind(CycleState& state, const api::Pod& pod, std::string_view node) {
  PointTimer timer(metrics_, metrics::Point::kBind);
  for (auto* p : bind_) {
    Status s = p->Bind(state, pod, node);
    if (s.IsSkip()) continue;
    s.WithPlugin(p->Name());
    return timer.Done(s);
  }
  return timer.Done(Status::Error("no bind plugin bound pod " + pod.Key()));
}

void Framework::RunPostBind(CycleState& state, const api::Pod& pod, std::string_view node) {
  PointTimer timer(metrics_, metrics::Point::kPostBind);
  for (auto* p : post_bind_) p->PostBind(state, pod, node);
  timer.Record(Status::Success());
}

void Framework::SetMetrics(metrics::ProfileMetrics* m) {
  metrics_ = m;
  auto resolve = [m](const auto& plugins, metrics::Point point) {
    std::vector<metrics::PluginMetrics*> out;
    for (const auto* p : plugins)
      out.push_back(m == nullptr ? nullptr : m->ForPlugin(p->Name(), point));
    return out;
  };
  m_pre_filter_ = resolve(pre_filter_, metrics::Point::kPreFilter);
  m_filter_ = resolve(filter_, metrics::Point::kFilter);
  m_pre_score_ = resolve(pre_score_, metrics::Point::kPreScore);
  m_score_.clear();
  for (const auto& sp : score_) {
    m_score_.push_back(m == nullptr ? nullptr
                                    : m->ForPlugin(sp.plugin->Name(), metrics::Point::kScore));
  }
  m_reserve_ = resolve(reserve_, metrics::Point::kReserve);
  m_permit_ = resolve(permit_, metrics::Point::kPermit);
  rejected_at_.assign(filter_.size(), 0);
}

void Framework::CountRejection(std::string_view plugin) {
  // Plugin names are the plugins' own literals: compare by address first (the common case).
  for (size_t j = 0; j < filter_.size(); ++j) {
    std::string_view name = filter_[j]->Name();
    if (name.data() == plugin.data() || name == plugin) {
      ++rejected_at_[j];
      return;
    }
  }
}

void Framework::CountFilterEvaluations(const CycleState& state, int32_t evaluated) {
  // Filter runs the plugins in order and stops at the first rejection, so plugin j ran on every
  // evaluated node that no earlier plugin rejected (kube-scheduler counts each such run).
  const auto& skip = state.skip_filter();
  int64_t reaching = evaluated;
  for (size_t j = 0; j < filter_.size(); ++j) {
    if (j < skip.size() && skip[j]) continue;
    m_filter_[j]->CountEvaluations(reaching);
    reaching -= rejected_at_[j];
  }
}

std::vector<std::string> Framework::PluginNames(config::Point point) const {
  std::vector<std::string> out;
  auto add = [&out](const auto& list) {
    for (const auto* p : list) out.emplace_back(p->Name());
  };
  switch (point) {
    case config::Point::kQueueSort: out.emplace_back(queue_sort_->Name()); break;
    case config::Point::kPreFilter: add(pre_filter_); break;
    case config::Point::kFilter: add(filter_); break;
    case config::Point::kPostFilter: add(post_filter_); break;
    case config::Point::kPreScore: add(pre_score_); break;
    case config::Point::kScore:
      for (const auto& s : score_) out.emplace_back(s.plugin->Name());
      break;
    case config::Point::kReserve: add(reserve_); break;
    case config::Point::kPermit: add(permit_); break;
    case config::Point::kPreBind: add(pre_bind_); break;
    case config::Point::kBind: add(bind_); break;
    case config::Point::kPostBind: add(post_bind_); break;
    default: break;
  }
  return out;
}

}  // namespace gpusched::framework::runtime
