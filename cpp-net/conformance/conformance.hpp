// conformance.hpp: runs a conformance scenario (docs/conformance.md) against an engine.
//
// One runner feeds the same scenario files to every engine through the mmo::Engine
// interface: the Rust core through mmo_core.h and the C++ baseline natively. A scenario is
// single-threaded, so its expected events, statuses and state are exact.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.hpp"

namespace mmo::conformance {

// Makes an engine from a configuration; throws (std::exception) if the engine refuses it.
using EngineFactory = std::function<std::unique_ptr<Engine>(const MmoConfig&)>;

struct Result {
  std::string name;
  int steps = 0;                      // commands and block lines checked
  std::vector<std::string> failures;  // "name:line: what was expected, what happened"
  bool passed() const { return failures.empty() && steps > 0; }
};

Result run_text(std::string_view text, const std::string& name, const EngineFactory& make);
Result run_file(const std::string& path, const EngineFactory& make);

}  // namespace mmo::conformance
