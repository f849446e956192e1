// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/dynamic_resources/selectors.h"

#include <utility>

#include "src/cel/device_selector.h"

namespace gpusched::plugins::dynamic_resources {
namespace {

constexpr size_t kMaxMemos = 4096;

std::string MemoKey(const api::DeviceChoice& choice) {
  std::string key = choice.device_class;
  for (const std::string& s : choice.selectors) {
    key += '\0';
    key += s;
  }
  return key;
}

}  // namespace

common::StatusOr<std::shared_ptr<const cel::Program>> SelectorCache::Compile(
    const std::string& expression) {
  if (auto it = programs_.find(expression); it != programs_.end()) return it->second;
  GPUSCHED_ASSIGN_OR_RETURN(std::shared_ptr<const cel::Program> program,
                            cel::CompileDeviceSelector(expression));
  programs_.emplace(expression, program);
  return program;
}

common::StatusOr<std::shared_ptr<const ChoiceMatches>> SelectorCache::Matches(
    const framework::DraView& view, const framework::DeviceIndex& index,
    const api::DeviceChoice& choice) {
  const api::DeviceClassPtr device_class = view.GetDeviceClass(choice.device_class);
  if (device_class == nullptr) {
    return common::NotFoundError("device class " + choice.device_class + " does not exist");
  }
  const uint64_t class_version = view.class_version();
  const std::string key = MemoKey(choice);
  common::MutexLock l(mu_);
  if (auto it = memos_.find(key); it != memos_.end() && it->second.index_version == index.version &&
                                  it->second.class_version == class_version) {
    return it->second.matches;
  }
  std::vector<std::shared_ptr<const cel::Program>> programs;
  for (const std::vector<std::string>* list : {&device_class->selectors, &choice.selectors}) {
    for (const std::string& expression : *list) {
      common::StatusOr<std::shared_ptr<const cel::Program>> p = Compile(expression);
      if (!p.ok()) {
        return common::InvalidArgumentError("selector " + expression + ": " +
                                            std::string(p.status().message()));
      }
      programs.push_back(*std::move(p));
    }
  }
  auto out = std::make_shared<ChoiceMatches>();
  out->match.assign(index.devices.size(), 0);
  for (size_t d = 0; d < index.devices.size(); ++d) {
    const framework::DeviceEntry& e = index.devices[d];
    cel::DeviceInput input;
    input.driver = e.slice->driver;
    input.attributes = &e.device->attributes;
    input.capacity = &e.device->capacity;
    input.allow_multiple_allocations = e.device->allow_multiple_allocations;
    bool all = true;
    for (const auto& program : programs) {
      common::StatusOr<bool> m = cel::MatchDevice(*program, input);
      if (!m.ok()) {
        if (out->error.empty()) {
          out->error = "device " + e.key + ": " + std::string(m.status().message());
        }
        all = false;
        break;
      }
      if (!*m) {
        all = false;
        break;
      }
    }
    out->match[d] = all ? 1 : 0;
  }
  if (memos_.size() >= kMaxMemos) memos_.clear();
  memos_[key] = Memo{index.version, class_version, out};
  return std::shared_ptr<const ChoiceMatches>(out);
}

common::StatusOr<std::shared_ptr<const ChoiceMatches>> SelectorCache::ClassMatches(
    const framework::DraView& view, const framework::DeviceIndex& index,
    const std::string& device_class) {
  api::DeviceChoice bare;
  bare.device_class = device_class;
  return Matches(view, index, bare);
}

common::StatusOr<ClaimPlan> PlanClaim(SelectorCache& selectors, const framework::DraView& view,
                                      const framework::DeviceIndex& index,
                                      api::ResourceClaimPtr claim) {
  ClaimPlan plan;
  plan.claim = claim;
  for (const api::DeviceRequest& r : claim->spec.requests) {
    RequestPlan rp;
    rp.name = r.name;
    auto add = [&](std::string result, const api::DeviceChoice& choice) -> common::Status {
      common::StatusOr<std::shared_ptr<const ChoiceMatches>> m =
          selectors.Matches(view, index, choice);
      if (!m.ok()) {
        return common::InvalidArgumentError("request " + result + ": " +
                                            std::string(m.status().message()));
      }
      rp.alternatives.push_back({std::move(result), &choice, *std::move(m)});
      return common::Status::Ok();
    };
    if (r.exactly) GPUSCHED_RETURN_IF_ERROR(add(r.name, *r.exactly));
    for (const api::DeviceSubRequest& sub : r.first_available) {
      GPUSCHED_RETURN_IF_ERROR(add(r.name + "/" + sub.name, sub.choice));
    }
    plan.requests.push_back(std::move(rp));
  }
  for (const api::DeviceConstraint& c : claim->spec.constraints) {
    if (c.match_attribute.empty()) continue;
    ConstraintPlan cp;
    cp.attribute = c.match_attribute;
    for (const std::string& name : c.requests) {
      const std::string_view base = std::string_view(name).substr(0, name.find('/'));
      for (size_t i = 0; i < plan.requests.size(); ++i) {
        if (plan.requests[i].name == base) cp.requests.push_back(i);
      }
    }
    plan.constraints.push_back(std::move(cp));
  }
  return plan;
}

}  // namespace gpusched::plugins::dynamic_resources
