// SPDX-License-Identifier: Apache-2.0
// Overloaded: a visitor for std::visit made of lambdas, one per alternative:
//   std::visit(common::Overloaded{[](const A&) {...}, [](const B&) {...}}, v);
#pragma once

namespace gpusched::common {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace gpusched::common
