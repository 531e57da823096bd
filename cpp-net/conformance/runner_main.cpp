// mmo-conformance: runs conformance scenario files (docs/conformance.md) against one engine
// or all of them and prints each failure as file:line. Exit status 0 only if all pass.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "conformance/engines.hpp"

int main(int argc, char** argv) {
  std::string engine = "all";
  std::vector<std::string> files;
  CLI::App app{"mmo-conformance: feed conformance scenarios to the game-state engines"};
  app.add_option("--engine", engine, "rust, baseline, or all")->capture_default_str();
  app.add_option("files", files, "scenario files (.scn)")->required();
  CLI11_PARSE(app, argc, argv);
  std::vector<std::string> engines = engine == "all" ? mmo::conformance::engine_names() : std::vector<std::string>{engine};
  int failed = 0;
  for (const auto& name : engines) {
    const auto make = mmo::conformance::engine_factory(name);
    for (const auto& file : files) {
      const auto r = mmo::conformance::run_file(file, make);
      std::printf("%-8s %-4s %s (%d steps)\n", name.c_str(), r.passed() ? "ok" : "FAIL", r.name.c_str(), r.steps);
      for (const auto& f : r.failures) std::printf("         %s\n", f.c_str());
      failed += !r.passed();
    }
  }
  std::printf("%d failed\n", failed);
  return failed == 0 ? 0 : 1;
}
