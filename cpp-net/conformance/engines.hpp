// engines.hpp: the engines a conformance run can be pointed at, by name.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "conformance/conformance.hpp"
#ifdef MMO_HAVE_BASELINE
#include "baseline/baseline_engine.hpp"
#endif

namespace mmo::conformance {

inline std::vector<std::string> engine_names() {
#ifdef MMO_HAVE_BASELINE
  return {"rust", "baseline"};
#else
  return {"rust"};
#endif
}

inline EngineFactory engine_factory(const std::string& name) {
  if (name == "rust") return [](const MmoConfig& c) { return make_rust_engine(c); };
#ifdef MMO_HAVE_BASELINE
  if (name == "baseline") return [](const MmoConfig& c) { return make_baseline_engine(c); };
#endif
  throw std::invalid_argument("unknown engine '" + name + "'");
}

}  // namespace mmo::conformance
