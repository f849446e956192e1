// SPDX-License-Identifier: Apache-2.0
// The EventHandler without the scheduler's parts, as the extender runs it: no queue (pending pods
// are not tracked) and no gang, volume or DRA store (the events of those kinds are ignored).
#include "src/events/event_handler.h"

#include <gtest/gtest.h>

#include <memory>

#include "src/common/clock.h"
#include "src/testing/builders.h"

namespace gpusched::events {
namespace {

using testing::MakeNode;
using testing::MakePod;

TEST(EventHandlerTest, WithoutAQueueOrOptionalStoresItFeedsTheCacheAndThePdbs) {
  common::FakeClock clock;
  cache::Cache cache(clock);
  cache::PdbStore pdbs;
  EventHandler h({.cache = cache, .pdbs = pdbs});

  h.OnNodeAdd(MakeNode("n1").Cpu("8").Memory("32Gi").Ptr());
  api::PodPtr bound = MakePod("ns", "bound").NodeName("n1").Cpu("1").Ptr();
  api::PodPtr pending = MakePod("ns", "pending").Cpu("1").Ptr();
  h.OnPodAdd(bound);
  h.OnPodAdd(pending);
  EXPECT_TRUE(cache.Contains(bound->meta.uid));
  EXPECT_FALSE(cache.Contains(pending->meta.uid)) << "a pending pod is kube-scheduler's";
  // The pending pod binds (the informer's update): now it is in the cache.
  api::PodPtr placed = MakePod("ns", "pending").NodeName("n1").Cpu("1").Ptr();
  h.OnPodUpdate(pending, placed);
  EXPECT_TRUE(cache.Contains(placed->meta.uid));
  h.OnPodDelete(bound);
  EXPECT_FALSE(cache.Contains(bound->meta.uid));

  auto pdb = std::make_shared<api::PodDisruptionBudget>();
  pdb->meta.namespace_ = "ns";
  pdb->meta.name = "budget";
  h.OnPdbAdd(pdb);
  ASSERT_EQ(pdbs.List().size(), 1u);
  h.OnPdbDelete(pdb);
  EXPECT_TRUE(pdbs.List().empty());

  // Kinds without a store: ignored, nothing fails.
  auto group = std::make_shared<api::PodGroup>();
  group->namespace_ = "ns";
  group->name = "gang";
  h.OnPodGroupAdd(group);
  h.OnPodGroupUpdate(group, group);
  h.OnPodGroupDelete(group);
  auto pvc = std::make_shared<api::PersistentVolumeClaim>();
  pvc->meta.namespace_ = "ns";
  pvc->meta.name = "data";
  const kube::StorageObject storage = api::PersistentVolumeClaimPtr(pvc);
  h.OnStorageAdd(storage);
  h.OnStorageUpdate(storage, storage);
  h.OnStorageDelete(storage);
  auto cls = std::make_shared<api::DeviceClass>();
  cls->name = "gpu.nvidia.com";
  const kube::DraObject dra = api::DeviceClassPtr(cls);
  h.OnDraAdd(dra);
  h.OnDraUpdate(dra, dra);
  h.OnDraDelete(dra);
  h.OnNodeDelete(MakeNode("n1").Ptr());
  EXPECT_TRUE(cache.CheckInvariants().ok());
}

}  // namespace
}  // namespace gpusched::events
