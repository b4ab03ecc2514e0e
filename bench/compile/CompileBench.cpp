//===- CompileBench.cpp - Compile time per spec and target -----------------===//
//
// Times what `loomc --emit=scheduled` does for every spec in configs/ and
// every chip: load the YAML, build and verify the graph, run the Loom
// pipeline (partition, plan-memory, derive-events, schedule,
// verify-schedule), print the result. Run:
//   build/bench/compile/loom-bench-compile --benchmark_min_time=0.2s
//
//===----------------------------------------------------------------------===//
#include "ir/LoomDialect.h"
#include "passes/Passes.h"
#include "targets/chips/ChipTable.h"
#include "tools/frontend/BuildGraph.h"
#include "tools/spec/Spec.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <benchmark/benchmark.h>

#include <filesystem>

namespace {

void compileSpec(benchmark::State &state, std::string path,
                 const loom::ChipInfo *chip) {
  for (auto _ : state) {
    loom::spec::LoadResult loaded = loom::spec::loadSpecFile(path);
    if (!loaded.ok()) {
      state.SkipWithError(("spec does not load: " + path).c_str());
      return;
    }
    mlir::MLIRContext context;
    context.disableMultithreading();
    auto module = loom::buildGraph(context, *loaded.spec, *chip);
    if (!module) {
      state.SkipWithError("graph does not verify");
      return;
    }
    mlir::PassManager pm(&context);
    mlir::loom::buildLoomPipeline(pm, {});
    if (mlir::failed(pm.run(*module))) {
      state.SkipWithError("the Loom pipeline failed");
      return;
    }
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    benchmark::DoNotOptimize(text.data());
  }
}

/// One benchmark per (spec, chip): "compile/<family>/<spec>/<chip>".
void registerAll() {
  namespace fs = std::filesystem;
  std::vector<fs::path> specs;
  for (const auto &entry :
       fs::recursive_directory_iterator(LOOM_SOURCE_DIR "/configs"))
    if (entry.path().extension() == ".yaml")
      specs.push_back(entry.path());
  std::sort(specs.begin(), specs.end());
  for (const fs::path &spec : specs)
    for (const loom::ChipInfo &chip : loom::chipTable()) {
      std::string name = "compile/" + spec.parent_path().filename().string() +
                         "/" + spec.stem().string() + "/" + chip.name;
      benchmark::RegisterBenchmark(name.c_str(), compileSpec, spec.string(),
                                   &chip)
          ->Unit(benchmark::kMillisecond);
    }
}

} // namespace

int main(int argc, char **argv) {
  registerAll();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
