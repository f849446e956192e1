// SPDX-License-Identifier: Apache-2.0
#include "src/framework/node_info.h"

#include <algorithm>
#include <bit>

#include "src/api/gpu_devices.h"

namespace gpusched::framework {

PodDevices PodDevices::From(const api::GpuAssignment& a) {
  PodDevices d;
  for (int8_t idx : a.devices) {
    if (idx >= 0 && idx < 32) d.devices |= uint32_t{1} << idx;
  }
  d.milli = a.milli;
  d.memory_mib = a.memory_mib;
  return d;
}

api::GpuAssignment PodDevices::ToAssignment() const {
  api::GpuAssignment a;
  for (uint32_t m = devices; m != 0; m &= m - 1) {
    a.devices.push_back(static_cast<int8_t>(std::countr_zero(m)));
  }
  a.milli = milli;
  a.memory_mib = memory_mib;
  return a;
}

namespace {

// The flat form of one container port; Atom{} for the all-addresses hostIP.
HostPort FlatHostPort(const api::ContainerPort& p) {
  const bool any = p.host_ip.empty() || p.host_ip == "0.0.0.0";
  return HostPort{any ? common::Atom{} : common::Intern(p.host_ip), p.protocol, p.host_port};
}

void AppendContainerHostPorts(const api::Container& c, std::vector<HostPort>& out) {
  for (const api::ContainerPort& p : c.ports) {
    if (p.host_port > 0) out.push_back(FlatHostPort(p));
  }
}

}  // namespace

void AppendHostPorts(const api::Pod& pod, std::vector<HostPort>& out) {
  for (const api::Container& c : pod.init_containers) {
    if (c.restartable) AppendContainerHostPorts(c, out);
  }
  for (const api::Container& c : pod.containers) AppendContainerHostPorts(c, out);
}

bool HostPortConflicts(std::span<const HostPort> used, const HostPort& want) {
  for (const HostPort& u : used) {
    if (u.port != want.port || !(u.protocol == want.protocol)) continue;
    if (u.ip.empty() || want.ip.empty() || u.ip == want.ip) return true;
  }
  return false;
}

bool NodeInfo::AddPod(api::PodPtr pod, const api::GpuAssignment& gpu) {
  const bool charged =
      !gpu.empty() && node != nullptr && api::ApplyAssignment(node->gpu, gpus, gpu, +1);
  AppendHostPorts(*pod, used_ports);
  requested.Add(pod->requests);
  ++pod_count;
  pod_priorities.push_back(pod->priority);
  pods.push_back(std::move(pod));
  pod_devices.push_back(charged ? PodDevices::From(gpu) : PodDevices{});
  return charged;
}

bool NodeInfo::AddPod(api::PodPtr pod, PodDevices gpu) {
  bool charged = !gpu.empty() && node != nullptr;
  for (uint32_t m = gpu.devices; charged && m != 0; m &= m - 1) {
    const int d = std::countr_zero(m);
    charged = d < node->gpu.count &&
              gpus[static_cast<size_t>(d)].used_milli + gpu.milli <= api::kMilliPerGpu;
  }
  for (uint32_t m = charged ? gpu.devices : 0; m != 0; m &= m - 1) {
    api::GpuDeviceState& d = gpus[static_cast<size_t>(std::countr_zero(m))];
    d.used_milli += gpu.milli;
    d.used_memory_mib += gpu.memory_mib;
    ++d.pods;
  }
  AppendHostPorts(*pod, used_ports);
  requested.Add(pod->requests);
  ++pod_count;
  pod_priorities.push_back(pod->priority);
  pods.push_back(std::move(pod));
  pod_devices.push_back(charged ? gpu : PodDevices{});
  return charged;
}

void NodeInfo::RemovePodAt(size_t i) {
  RemoveHostPortsOf(*pods[i]);
  requested.Sub(pods[i]->requests);
  --pod_count;
  // Released as api::ApplyAssignment(-1) does, clamping at zero.
  const PodDevices gpu = pod_devices[i];
  for (uint32_t m = gpu.devices; m != 0; m &= m - 1) {
    api::GpuDeviceState& d = gpus[static_cast<size_t>(std::countr_zero(m))];
    d.used_milli = std::max(0, d.used_milli - gpu.milli);
    d.used_memory_mib = std::max<int64_t>(0, d.used_memory_mib - gpu.memory_mib);
    d.pods = std::max(0, d.pods - 1);
  }
  pods[i] = std::move(pods.back());
  pods.pop_back();
  pod_devices[i] = pod_devices.back();
  pod_devices.pop_back();
  pod_priorities[i] = pod_priorities.back();
  pod_priorities.pop_back();
}

void NodeInfo::RemoveHostPortsOf(const api::Pod& pod) {
  if (used_ports.empty()) return;
  auto remove_one = [this](const api::Container& c) {
    for (const api::ContainerPort& p : c.ports) {
      if (p.host_port <= 0) continue;
      auto it = std::find(used_ports.begin(), used_ports.end(), FlatHostPort(p));
      if (it == used_ports.end()) continue;
      *it = used_ports.back();
      used_ports.pop_back();
    }
  };
  for (const api::Container& c : pod.init_containers) {
    if (c.restartable) remove_one(c);
  }
  for (const api::Container& c : pod.containers) remove_one(c);
}

int32_t NodeInfo::IndexOfPod(const api::Pod& pod) const {
  for (size_t i = 0; i < pods.size(); ++i) {
    if (pods[i].get() == &pod) return static_cast<int32_t>(i);
  }
  for (size_t i = 0; i < pods.size(); ++i) {
    if (pods[i]->meta.uid == pod.meta.uid) return static_cast<int32_t>(i);
  }
  return -1;
}

int32_t NodeInfo::FreeWholeGpus() const {
  int32_t free = 0;
  const auto& g = node->gpu;
  for (int i = 0; i < g.count; ++i) {
    if (g.Healthy(i) && gpus[static_cast<size_t>(i)].used_milli == 0 &&
        gpus[static_cast<size_t>(i)].used_memory_mib == 0) {
      ++free;
    }
  }
  return free;
}

int64_t NodeInfo::FreeGpuMilli() const {
  int64_t free = 0;
  const auto& g = node->gpu;
  for (int i = 0; i < g.count; ++i) {
    if (g.Healthy(i)) free += api::kMilliPerGpu - gpus[static_cast<size_t>(i)].used_milli;
  }
  return free;
}

const NodeInfo* Snapshot::Get(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return nullptr;
  const NodeInfo& n = nodes_[static_cast<size_t>(it->second)];
  return n.valid() ? &n : nullptr;
}

void Snapshot::CountPodsForCache(std::span<const api::PodPtr> pods, int sign) {
  for (const api::PodPtr& p : pods) {
    const api::Affinity& a = p->affinity;
    if (!a.pod_affinity.empty() || !a.pod_anti_affinity.empty()) pods_with_affinity_ += sign;
    if (!a.pod_anti_affinity.required.empty()) pods_with_required_anti_affinity_ += sign;
    auto it = pods_by_priority_.try_emplace(p->priority, 0).first;
    it->second += sign;
    if (it->second == 0) pods_by_priority_.erase(it);
  }
}

NodeInfo& Snapshot::MutableSlotForCache(NodeIndex i) {
  if (static_cast<size_t>(i) >= nodes_.size()) nodes_.resize(static_cast<size_t>(i) + 1);
  return nodes_[static_cast<size_t>(i)];
}

}  // namespace gpusched::framework
