//===- loomc.cpp - Loom's front door: YAML spec in, artifacts out ----------===//
//
//   loomc SPEC.yaml --target=h200 [-o DIR] [--emit=graph]
//
// Nothing is written unless the whole compilation succeeds: every artifact is
// produced in memory first, then written to a temporary file and renamed.
//
//===----------------------------------------------------------------------===//
#include "ir/LoomDialect.h"
#include "targets/chips/ChipTable.h"
#include "tools/frontend/BuildGraph.h"
#include "tools/spec/Spec.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace {

enum class Emit { Graph };

cl::OptionCategory loomcCategory("loomc options");

cl::opt<std::string> specPath(cl::Positional, cl::Required,
                              cl::desc("<spec.yaml>"),
                              cl::cat(loomcCategory));

cl::opt<std::string>
    targetName("target", cl::Required,
               cl::desc("Chip to compile for: h100, h200, b200, mi350x or "
                        "host (the chip table in targets/chips)"),
               cl::value_desc("chip"), cl::cat(loomcCategory));

cl::opt<std::string>
    outputDir("o",
              cl::desc("Write artifacts into this directory (created if "
                       "missing) as <name>.<target>.<ext>; without -o the "
                       "emitted text goes to stdout"),
              cl::value_desc("dir"), cl::cat(loomcCategory));

cl::opt<Emit> emitKind(
    "emit", cl::desc("What to produce:"), cl::init(Emit::Graph),
    cl::values(clEnumValN(Emit::Graph, "graph",
                          "the loom.graph built from the spec (.mlir)")),
    cl::cat(loomcCategory));

/// Writes `text` to `path` atomically: a temporary beside it, then a rename,
/// so a failure never leaves a partial artifact behind.
bool writeAtomically(StringRef path, StringRef text) {
  std::string error;
  auto file = mlir::openOutputFile(path.str() + ".tmp", &error);
  if (!file) {
    errs() << "loomc: error: " << error << "\n";
    return false;
  }
  file->os() << text;
  file->os().flush();
  if (file->os().has_error()) {
    errs() << "loomc: error: cannot write '" << path << ".tmp'\n";
    return false;
  }
  file->keep();
  file.reset();
  if (std::error_code ec = sys::fs::rename(path + ".tmp", path)) {
    errs() << "loomc: error: cannot write '" << path << "': " << ec.message()
           << "\n";
    sys::fs::remove(path + ".tmp");
    return false;
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(loomcCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "loomc: compile a Loom YAML kernel spec (configs/README.md) for one "
      "chip\n");

  const loom::ChipInfo *chip = loom::findChip(targetName);
  if (!chip) {
    errs() << "loomc: error: unknown target '" << targetName
           << "'; known targets: " << loom::knownChipNames() << "\n";
    return 1;
  }

  loom::spec::LoadResult loaded = loom::spec::loadSpecFile(specPath);
  if (!loaded.ok()) {
    for (const loom::spec::Diagnostic &diag : loaded.errors)
      errs() << diag.str() << "\n";
    return 1;
  }
  const loom::spec::Spec &spec = *loaded.spec;
  if (!spec.targets.empty() &&
      std::find(spec.targets.begin(), spec.targets.end(), targetName.getValue()) ==
          spec.targets.end()) {
    errs() << specPath << ": error: spec '" << spec.name
           << "' does not list target '" << targetName << "' in 'targets'\n";
    return 1;
  }

  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      loom::buildGraph(context, spec, *chip);
  if (!module) {
    errs() << "loomc: error: the graph built from '" << specPath
           << "' does not verify (diagnostics above)\n";
    return 1;
  }

  std::string text;
  raw_string_ostream os(text);
  module->print(os);
  os.flush();

  if (outputDir.empty()) {
    outs() << text;
    return 0;
  }
  if (std::error_code ec = sys::fs::create_directories(outputDir)) {
    errs() << "loomc: error: cannot create '" << outputDir
           << "': " << ec.message() << "\n";
    return 1;
  }
  SmallString<256> path(outputDir);
  sys::path::append(path, spec.name + "." + targetName + ".mlir");
  return writeAtomically(path, text) ? 0 : 1;
}
