// SPDX-License-Identifier: Apache-2.0
// Manifests for the consolidation tests (consolidation_sim_test, consolidation_dry_run_test,
// consolidation_property_test): a GPU node and a running 1-GPU replica of a ReplicaSet, optionally
// opted in to moves.
#pragma once

#include <string>

namespace gpusched::sim {

// A node with `gpus` nvidia.com/gpu; with `gpu_taint`, the EKS-style taint nvidia.com/gpu
// NoSchedule.
inline std::string GpuNode(const std::string& name, int gpus, bool gpu_taint = false) {
  return "apiVersion: v1\nkind: Node\nmetadata: {name: " + name +
         ", labels: {kubernetes.io/hostname: " + name + "}}\n" +
         (gpu_taint
              ? "spec: {taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]}\n"
              : "") +
         "status:\n  allocatable: {cpu: \"64\", memory: 256Gi, pods: \"110\", nvidia.com/gpu: \"" +
         std::to_string(gpus) + "\"}\n---\n";
}

// A running 1-GPU pod of ReplicaSet `rs` on `node`'s device `device`, tolerating the GPU taint;
// with `rs` empty, a bare pod (no controller, so never movable); with `cpu` ("8"), that request.
inline std::string Replica(const std::string& name, const std::string& node, int device,
                           const std::string& rs, bool movable, const std::string& cpu = "") {
  const std::string owner =
      rs.empty() ? ""
                 : "  labels: {app: " + rs +
                       "}\n  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, "
                       "name: " +
                       rs + ", uid: uid-" + rs + ", controller: true}]\n";
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n" + owner +
         "  annotations: {gpusched.io/gpu-devices: \"" + std::to_string(device) + "\"" +
         (movable ? ", gpusched.io/movable: \"true\"" : "") + "}\nspec:\n  nodeName: " + node +
         "\n  tolerations: [{key: nvidia.com/gpu, operator: Exists}]\n"
         "  containers: [{name: c, resources: {limits: {nvidia.com/gpu: \"1\"" +
         (cpu.empty() ? "" : ", cpu: \"" + cpu + "\"") + "}}}]\n---\n";
}

// The e2e issue's cluster: four 8-GPU nodes n1..n4, each running two 1-GPU replicas of "infer"
// (infer-n<k>-<device>).
inline std::string FourNodes(bool movable, bool gpu_taint = false) {
  std::string yaml;
  for (int n = 1; n <= 4; ++n) {
    const std::string node = "n" + std::to_string(n);
    yaml += GpuNode(node, 8, gpu_taint);
    for (int d = 0; d < 2; ++d) {
      yaml += Replica("infer-" + node + "-" + std::to_string(d), node, d, "infer", movable);
    }
  }
  return yaml;
}

}  // namespace gpusched::sim
