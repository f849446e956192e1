// SPDX-License-Identifier: Apache-2.0
#include "src/binding/binding_cycle.h"

#include <utility>

namespace gpusched::binding {

using framework::Status;

framework::Status BindingCycle::Reserve(const Attempt& a, const framework::NodeInfo& node) {
  Status st = a.fw->RunReserve(*a.state, *a.pod, node);
  if (!st.ok()) return st;
  common::Status assumed = cache_.AssumePod(a.pod, a.node, a.state->allocation().gpu);
  if (!assumed.ok()) {
    a.fw->RunUnreserve(*a.state, *a.pod, a.node);
    return Status::Error(assumed.ToString());
  }
  st = a.fw->RunPermit(*a.state, a.pod, a.node);
  if (st.ok() || st.IsWait()) return Status::Success();
  Rollback(a);
  return st;
}

void BindingCycle::Bind(Attempt attempt, Done done) {
  const std::string uid = attempt.pod->meta.uid;
  waiting_.OnDecided(uid, [this, a = std::move(attempt),
                           done = std::move(done)](Status permit) mutable {
    executor_.Post([this, a = std::move(a), done = std::move(done), permit = std::move(permit)] {
      if (!permit.ok()) {
        Rollback(a);
        done(permit);
        return;
      }
      BindNow(a, done);
    });
  });
}

void BindingCycle::BindNow(const Attempt& a, const Done& done) {
  Status st = a.fw->RunPreBind(*a.state, *a.pod, a.node);
  if (st.ok()) st = a.fw->RunBind(*a.state, *a.pod, a.node);
  if (!st.ok()) {
    Rollback(a);
    done(Status::Error("Binding rejected: " + st.ToString()));
    return;
  }
  cache_.FinishBinding(a.pod->meta.uid).IgnoreError();
  a.fw->RunPostBind(*a.state, *a.pod, a.node);
  done(Status::Success());
}

void BindingCycle::Abandon(const Attempt& a) {
  waiting_.Remove(a.pod->meta.uid);
  Rollback(a);
}

void BindingCycle::Rollback(const Attempt& a) {
  a.fw->RunUnreserve(*a.state, *a.pod, a.node);
  cache_.ForgetPod(a.pod->meta.uid).IgnoreError();
}

}  // namespace gpusched::binding
