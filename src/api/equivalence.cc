// SPDX-License-Identifier: Apache-2.0
#include "src/api/equivalence.h"

#include "src/api/key_writer.h"

namespace gpusched::api {

void SchedulingEquivalenceKey(const Pod& pod, std::string& out) {
  out.clear();
  KeyWriter w(out);
  w.Str(pod.meta.namespace_);
  // Annotations are sorted by key, so the scheduling ones come out in a canonical order.
  size_t n = 0;
  for (const auto& [k, v] : pod.meta.annotations) n += k.starts_with("gpusched.io/") ? 1 : 0;
  w.Size(n);
  for (const auto& [k, v] : pod.meta.annotations) {
    if (!k.starts_with("gpusched.io/")) continue;
    w.Str(k);
    w.Str(v);
  }
  w.A(pod.scheduler_name);
  w.Str(pod.node_name);
  w.I64(pod.priority);
  w.Size(pod.node_selector.size());
  for (const auto& [k, v] : pod.node_selector.items()) {
    w.A(k);
    w.A(v);
  }
  const NodeAffinity& na = pod.affinity.node_affinity;
  w.U8(na.required.has_value() ? 1 : 0);
  if (na.required) {
    w.Size(na.required->terms.size());
    for (const NodeSelectorTerm& t : na.required->terms) w.Term(t);
  }
  w.Size(na.preferred.size());
  for (const PreferredSchedulingTerm& p : na.preferred) {
    w.I64(p.weight);
    w.Term(p.preference);
  }
  w.PodAff(pod.affinity.pod_affinity);
  w.PodAff(pod.affinity.pod_anti_affinity);
  w.Size(pod.tolerations.size());
  for (const Toleration& t : pod.tolerations) {
    w.A(t.key);
    w.U8(static_cast<uint8_t>(t.op));
    w.A(t.value);
    w.U8(static_cast<uint8_t>(t.effect));
    w.U8(t.toleration_seconds.has_value() ? 1 : 0);
    w.I64(t.toleration_seconds.value_or(0));
  }
  w.Size(pod.topology_spread_constraints.size());
  for (const TopologySpreadConstraint& c : pod.topology_spread_constraints) {
    w.I64(c.max_skew);
    w.A(c.topology_key);
    w.U8(static_cast<uint8_t>(c.when_unsatisfiable));
    w.Selector(c.label_selector);
    w.U8(c.min_domains.has_value() ? 1 : 0);
    w.I64(c.min_domains.value_or(0));
    w.U8(static_cast<uint8_t>(c.node_affinity_policy));
    w.U8(static_cast<uint8_t>(c.node_taints_policy));
  }
  w.Resources(pod.overhead);
  w.Containers(pod.containers);
  w.Containers(pod.init_containers);
  w.U8(pod.has_restartable_init_containers ? 1 : 0);
  w.Resources(pod.requests);
  const GpuRequest& g = pod.gpu;
  w.I64(g.count);
  w.I64(g.milli);
  w.I64(g.share_memory_mib);
  w.I64(g.share_memory_permille);
  w.I64(g.min_device_memory_mib);
  w.Size(g.models.size());
  for (Atom m : g.models) w.A(m);
  w.Str(pod.gpu_error);
}

void NodeTwinKey(const Node& node, std::string& out) {
  out.clear();
  KeyWriter w(out);
  const Atom hostname = Names().hostname;
  const auto labels = node.meta.labels.items();
  const bool has_hostname = node.meta.labels.Has(hostname);
  w.U8(has_hostname ? 1 : 0);
  w.Size(labels.size() - (has_hostname ? 1 : 0));
  for (const auto& [k, v] : labels) {
    if (k == hostname) continue;
    w.A(k);
    w.A(v);
  }
  w.Size(node.meta.annotations.size());
  for (const auto& [k, v] : node.meta.annotations) {
    w.Str(k);
    w.Str(v);
  }
  w.U8(node.meta.deletion_timestamp.has_value() ? 1 : 0);
  w.Resources(node.capacity);
  w.Resources(node.allocatable);
  w.Size(node.taints.size());
  for (const Taint& t : node.taints) {
    w.A(t.key);
    w.A(t.value);
    w.U8(static_cast<uint8_t>(t.effect));
  }
  w.U8(node.unschedulable ? 1 : 0);
  w.Size(node.conditions.size());
  for (const Condition& c : node.conditions) {
    w.Str(c.type);
    w.Str(c.status);
    w.Str(c.reason);
  }
  w.Size(node.images.size());
  for (const ContainerImage& image : node.images) {
    w.Size(image.names.size());
    for (const std::string& name : image.names) w.Str(name);
    w.I64(image.size_bytes);
  }
  const NodeGpuInfo& g = node.gpu;
  w.I64(g.count);
  w.A(g.model);
  w.A(g.model_family);
  w.I64(g.memory_mib);
  w.U32(g.unhealthy_mask);
  for (uint8_t island : g.island) w.U8(island);
  w.U8(g.nvlink_known ? 1 : 0);
  w.I64(g.replicas);
  w.U8(g.mps ? 1 : 0);
  w.Str(g.source);
  w.Str(node.gpu_error);
}

uint64_t HashEquivalenceKey(std::string_view key) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : key) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace gpusched::api
