//===- loomc.cpp - Loom's front door: YAML spec in, artifacts out ----------===//
//
//   loomc SPEC.yaml --target=host -o DIR --emit=artifact [--run]
//
// Nothing is written unless the whole compilation succeeds: every artifact is
// produced in memory (or in a temporary file) first, then renamed into place.
//
//===----------------------------------------------------------------------===//
#include "ir/LoomDialect.h"
#include "passes/Passes.h"
#include "targets/amd/EmitHip.h"
#include "targets/chips/ChipTable.h"
#include "targets/common/TaskTable.h"
#include "targets/host/EmitHost.h"
#include "targets/nvidia/EmitCuda.h"
#include "tools/frontend/BuildGraph.h"
#include "tools/loomc/Toolchain.h"
#include "tools/spec/HfConfig.h"
#include "tools/spec/Spec.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace {

enum class Emit { Spec, Graph, Scheduled, Source, Artifact };

cl::OptionCategory loomcCategory("loomc options");

cl::opt<std::string> specPath(cl::Positional, cl::Optional,
                              cl::desc("<spec.yaml>"), cl::cat(loomcCategory));

// A spec made from a model's config.json instead of a spec file
// (tools/spec/HfConfig.h): the deployment is what the config does not say.
cl::opt<std::string> hfConfig(
    "hf-config",
    cl::desc("Make the spec from a Hugging Face config.json (llama, qwen3, "
             "deepseek_v3, kimi_linear) instead of reading <spec.yaml>"),
    cl::value_desc("config.json"), cl::cat(loomcCategory));
cl::opt<int64_t> hfTp("tp", cl::desc("--hf-config: tensor-parallel ranks "
                                     "(MLA and KDA heads are split over them)"),
                      cl::init(1), cl::cat(loomcCategory));
cl::opt<int64_t> hfPageSize("page-size",
                            cl::desc("--hf-config: tokens per KV page"),
                            cl::init(0), cl::cat(loomcCategory));
cl::opt<int64_t> hfMaxBatch("max-batch",
                            cl::desc("--hf-config: most requests (KDA: "
                                     "sequences) a launch takes"),
                            cl::init(0), cl::cat(loomcCategory));
cl::opt<int64_t> hfMaxPages("max-pages",
                            cl::desc("--hf-config: pages of the KV cache pool"),
                            cl::init(0), cl::cat(loomcCategory));
cl::opt<int64_t> hfMaxTokens("max-tokens",
                             cl::desc("--hf-config: KDA's most packed tokens "
                                      "a launch takes"),
                             cl::init(0), cl::cat(loomcCategory));
cl::opt<std::string> hfName("name", cl::desc("--hf-config: the spec's name"),
                            cl::cat(loomcCategory));

cl::opt<std::string>
    targetName("target", cl::Required,
               cl::desc("Chip to compile for: h100, h200, b200, mi350x or "
                        "host (the chip table in targets/chips)"),
               cl::value_desc("chip"), cl::cat(loomcCategory));

cl::opt<std::string> outputDir(
    "o",
    cl::desc("Write artifacts into this directory (created if missing) as "
             "<name>.<target>.<ext>; without -o, text goes to stdout"),
    cl::value_desc("dir"), cl::cat(loomcCategory));

cl::opt<Emit> emitKind(
    "emit", cl::desc("What to produce:"), cl::init(Emit::Graph),
    cl::values(
        clEnumValN(Emit::Spec, "spec",
                   "the spec --hf-config makes (.yaml), nothing compiled"),
        clEnumValN(Emit::Graph, "graph", "the loom.graph built from the spec (.mlir)"),
        clEnumValN(Emit::Scheduled, "scheduled",
                   "the graph after the Loom pipeline: tiles, events, worker "
                   "lists (.scheduled.mlir)"),
        clEnumValN(Emit::Source, "source",
                   "the generated program source (host: C++ .cpp; NVIDIA: "
                   "CUDA .cu; AMD: HIP .hip)"),
        clEnumValN(Emit::Artifact, "artifact",
                   "the artifact the runtime loads (.so) with its metadata "
                   "(.json) and sources; NVIDIA also writes the .cubin and "
                   "ptxas's resource report, AMD the .hsaco and clang's "
                   "resource report (.resources.txt); needs -o unless --run")),
    cl::cat(loomcCategory));

cl::opt<std::string> scheduleMode(
    "schedule", cl::desc("static (per-worker task lists, default) or dynamic "
                         "(one global work queue)"),
    cl::init("static"), cl::cat(loomcCategory));

cl::opt<bool> fuseRmsNorm(
    "fuse-rmsnorm",
    cl::desc("Fold each rmsnorm read only by linears into them (the linear "
             "tiles normalise the rows they load). Off by default: measured "
             "slower on the H200 so far (bench/results/h200/2026-12-03-f)"),
    cl::init(false), cl::cat(loomcCategory));

cl::opt<int> layersOverride(
    "layers",
    cl::desc("Decoder specs: compile only the first N layers (quick runs)"),
    cl::init(0), cl::cat(loomcCategory));

cl::opt<bool> runProgram(
    "run",
    cl::desc("Build the artifact, run it on the target's device (host: CPU "
             "threads; NVIDIA: the CUDA device; AMD: the HIP device) on "
             "random inputs, and check "
             "it against the fp64 oracle; exit non-zero above tolerance. "
             "Decoder specs run 2 layers unless --layers says otherwise"),
    cl::init(false), cl::cat(loomcCategory));

cl::opt<bool> profileTasks(
    "profile",
    cl::desc("GPU targets: the kernel records per-task timing (worker, start, "
             "end, wait) for loomrt_program_profile / loom-run --trace. Host "
             "programs always record it"),
    cl::init(false), cl::cat(loomcCategory));

cl::opt<bool> shareTileFunctions(
    "share-tile-functions",
    cl::desc("GPU targets: one tile function per distinct body, with the "
             "buffer addresses in a per-task table (AMD always does this; "
             "for NVIDIA it runs the same code path on a GPU)"),
    cl::init(false), cl::Hidden, cl::cat(loomcCategory));

cl::opt<int64_t> l2Prefetch(
    "l2-prefetch",
    cl::desc("NVIDIA targets: bytes of the coming tasks' weights each worker "
             "keeps prefetching into L2 (an experiment, measured slower on "
             "the H200; default 0: none)"),
    cl::init(0), cl::cat(loomcCategory));

cl::opt<bool> trustMeta(
    "trust-meta",
    cl::desc("Leave out the bodies' checks of the run-time meta values (page "
             "ids, kv_indptr, kv_lens, slot_mapping, cu_seqlens), for callers "
             "that validate them: a bad value then reads or writes out of "
             "bounds. Default: checked, a bad value fails the launch naming it"),
    cl::init(false), cl::cat(loomcCategory));

cl::opt<uint64_t> seed("seed", cl::desc("--run: random seed (default: fresh, printed)"),
                       cl::init(0), cl::cat(loomcCategory));
cl::opt<int> launches("launches", cl::desc("--run: launches in a row"),
                      cl::init(3), cl::cat(loomcCategory));
cl::list<int64_t> kvLens("kv-lens", cl::CommaSeparated,
                         cl::desc("--run: context length per request (MLA, decoder)"),
                         cl::cat(loomcCategory));
cl::list<int64_t> seqLens("seq-lens", cl::CommaSeparated,
                          cl::desc("--run: packed sequence lengths (KDA)"),
                          cl::cat(loomcCategory));

cl::opt<std::string> kernelsRoot(
    "kernels-root",
    cl::desc("Directory holding kernels/ (the task bodies the host program "
             "includes); default: this source tree"),
    cl::init(LOOM_SOURCE_DIR), cl::cat(loomcCategory));

int fail(const Twine &message) {
  errs() << "loomc: error: " << message << "\n";
  return 1;
}

/// Writes `text` to `path` atomically: a temporary beside it, then a rename,
/// so a failure never leaves a partial artifact behind.
bool writeAtomically(StringRef path, StringRef text) {
  std::string error;
  auto file = mlir::openOutputFile(path.str() + ".tmp", &error);
  if (!file) {
    fail(error);
    return false;
  }
  file->os() << text;
  file->os().flush();
  if (file->os().has_error()) {
    fail("cannot write '" + path + ".tmp'");
    return false;
  }
  file->keep();
  file.reset();
  if (std::error_code ec = sys::fs::rename(path + ".tmp", path)) {
    sys::fs::remove(path + ".tmp");
    fail("cannot write '" + path + "': " + ec.message());
    return false;
  }
  return true;
}

std::string printModule(mlir::ModuleOp module) {
  std::string text;
  raw_string_ostream os(text);
  module.print(os);
  return text;
}

/// The files of one compilation, written only once all exist.
struct Outputs {
  std::vector<std::pair<std::string, std::string>> files; // name, contents
  std::string library; ///< built code object (a temporary), if any
};

/// How loomc builds a GPU artifact for one vendor: the emitters, the device
/// compiler, file names, and the loomrt device kind that runs it.
struct GpuBackend {
  const char *sourceExt;      ///< ".cu", ".hip"
  const char *codeObjectKind; ///< "cubin", "hsaco": extension and asm symbols
  const char *reportExt;      ///< the device compiler's resource report
  const char *runtimeDevice;  ///< loomrt device kind
  const char *flagsVariable;  ///< what adds flags to the device compile
  mlir::LogicalResult (*emitKernel)(mlir::loom::GraphOp, std::string &,
                                    mlir::loom::DeviceKernelInfo &);
  mlir::LogicalResult (*emitHostLibrary)(mlir::loom::GraphOp,
                                         const mlir::loom::DeviceKernelInfo &,
                                         const std::string &, std::string &);
  bool (*compile)(const std::string &, const std::string &,
                  const std::string &, const std::string &, std::string &,
                  std::string &);
};

/// The GPU backend of a vendor; nullptr for the host target.
const GpuBackend *gpuBackendFor(loom::Vendor vendor) {
  static const GpuBackend nvidia = {
      ".cu",  "cubin", ".ptxas.txt", "cuda", loom::kNvccFlagsVariable,
      mlir::loom::emitCudaKernel,
      mlir::loom::emitCudaHostLibrary, loom::compileCubin};
  static const GpuBackend amd = {
      ".hip", "hsaco", ".resources.txt", "hip", loom::kHipFlagsVariable,
      mlir::loom::emitHipKernel,
      mlir::loom::emitHipHostLibrary, loom::compileHsaco};
  switch (vendor) {
  case loom::Vendor::Nvidia:
    return &nvidia;
  case loom::Vendor::Amd:
    return &amd;
  case loom::Vendor::Host:
    return nullptr;
  }
  return nullptr;
}

/// What the artifact's metadata records of how it was built beyond the
/// spec and the options above: the flags the environment added to its
/// compiles, and the bodies' directory when it is not this source tree's
/// (an experiment's copy).
json::Object buildJson(const GpuBackend *gpu) {
  json::Object flags;
  for (const char *variable :
       {loom::kHostFlagsVariable, gpu ? gpu->flagsVariable : nullptr}) {
    if (!variable)
      continue;
    std::vector<std::string> added = loom::extraFlags(variable);
    if (!added.empty())
      flags[variable] = json::Array(added);
  }
  json::Object build{{"environment_flags", std::move(flags)}};
  if (kernelsRoot != LOOM_SOURCE_DIR)
    build["kernels_root"] = kernelsRoot;
  if (fuseRmsNorm)
    build["fuse_rmsnorm"] = true;
  return build;
}

/// The spec YAML --hf-config makes from its config.json and the deployment
/// options (tools/spec/HfConfig.h); nullopt once its errors are printed.
std::optional<std::string> makeHfSpec() {
  auto text = llvm::MemoryBuffer::getFile(hfConfig);
  if (!text) {
    fail("cannot read '" + hfConfig + "': " + text.getError().message());
    return std::nullopt;
  }
  loom::spec::HfSpecOptions options;
  options.tp = hfTp;
  if (hfPageSize > 0)
    options.pageSize = hfPageSize;
  if (hfMaxBatch > 0)
    options.maxBatch = hfMaxBatch;
  if (hfMaxPages > 0)
    options.maxPages = hfMaxPages;
  if (hfMaxTokens > 0)
    options.maxTokens = hfMaxTokens;
  options.name = hfName;
  loom::spec::HfSpecResult made = loom::spec::specFromHfConfig(
      (*text)->getBuffer().str(), hfConfig, options);
  for (const loom::spec::Diagnostic &diag : made.errors)
    errs() << diag.str() << "\n";
  if (!made.errors.empty())
    return std::nullopt;
  return made.yaml;
}

/// loom-run, installed beside loomc (it links the runtime and the oracles,
/// not LLVM, so it also runs on GPU machines); "" if missing.
std::string findRunner(const char *argv0) {
  std::string self = sys::fs::getMainExecutable(argv0, (void *)&fail);
  SmallString<256> runner(sys::path::parent_path(self));
  sys::path::append(runner, "loom-run");
  return sys::fs::can_execute(runner) ? std::string(runner) : std::string();
}

/// --run on a GPU target: asks loom-run whether loomrt can open a device of
/// `kind`; if not, loom-run has printed the runtime's reason (no driver,
/// every path searched, no device) and this returns non-zero.
int probeDevice(const char *argv0, const char *kind) {
  std::string runner = findRunner(argv0);
  if (runner.empty())
    return fail("cannot find loom-run beside loomc");
  StringRef args[] = {runner, "--probe-device", kind};
  std::string error;
  int rc = sys::ExecuteAndWait(runner, args, std::nullopt, {}, 0, 0, &error);
  if (rc < 0)
    return fail("loom-run failed: " + error);
  if (rc != 0)
    return fail(Twine("--run --target=") + targetName + ": no '" + kind +
                "' device to run on here (above); --emit=artifact -o DIR "
                "builds the artifact without running it");
  return 0;
}

/// Runs `library` through loom-run (installed beside loomc; it links the
/// runtime and the oracles, not LLVM, so it also runs on GPU machines).
int runChecked(const char *argv0, const loom::spec::Spec &spec,
               const std::string &library) {
  std::string runner = findRunner(argv0);
  if (runner.empty())
    return fail("cannot find loom-run beside loomc");
  const GpuBackend *gpu = gpuBackendFor(loom::findChip(targetName)->vendor);
  std::vector<std::string> args = {runner, specPath, library, "--launches",
                                   std::to_string(launches), "--device",
                                   gpu ? gpu->runtimeDevice : "host"};
  if (auto *decoder = std::get_if<loom::spec::DecoderSpec>(&spec.family)) {
    args.push_back("--layers");
    args.push_back(std::to_string(decoder->layers));
  }
  if (seed != 0) {
    args.push_back("--seed");
    args.push_back(std::to_string(seed));
  }
  auto joined = [](const cl::list<int64_t> &values) {
    std::string s;
    for (int64_t v : values)
      s += (s.empty() ? "" : ",") + std::to_string(v);
    return s;
  };
  if (!kvLens.empty()) {
    args.push_back("--kv-lens");
    args.push_back(joined(kvLens));
  }
  if (!seqLens.empty()) {
    args.push_back("--seq-lens");
    args.push_back(joined(seqLens));
  }
  SmallVector<StringRef> refs(args.begin(), args.end());
  std::string error;
  int rc = sys::ExecuteAndWait(runner, refs, std::nullopt, {}, 0, 0, &error);
  if (rc < 0)
    return fail("loom-run failed: " + error);
  return rc;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(loomcCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "loomc: compile a Loom YAML kernel spec (configs/README.md) for one chip\n");

  const loom::ChipInfo *chip = loom::findChip(targetName);
  if (!chip)
    return fail("unknown target '" + targetName +
                "'; known targets: " + loom::knownChipNames());
  if (scheduleMode != "static" && scheduleMode != "dynamic")
    return fail("--schedule must be 'static' or 'dynamic', got '" + scheduleMode + "'");

  if (specPath.empty() == hfConfig.empty())
    return fail("give one spec: a <spec.yaml> or --hf-config=<config.json>");
  if (hfConfig.empty() && emitKind == Emit::Spec)
    return fail("--emit=spec prints the spec --hf-config makes");
  loom::spec::LoadResult loaded;
  std::string madeSpec; // --hf-config: the spec it made
  if (!hfConfig.empty()) {
    std::optional<std::string> made = makeHfSpec();
    if (!made)
      return 1;
    madeSpec = *made;
    // The loader checks the made spec as it checks a file; its positions
    // are the made spec's lines (--emit=spec shows them).
    loaded = loom::spec::parseSpec(madeSpec, hfConfig + " (made spec)");
  } else {
    loaded = loom::spec::loadSpecFile(specPath);
  }
  if (!loaded.ok()) {
    for (const loom::spec::Diagnostic &diag : loaded.errors)
      errs() << diag.str() << "\n";
    return 1;
  }
  if (emitKind == Emit::Spec) {
    if (outputDir.empty()) {
      outs() << madeSpec;
      return 0;
    }
    if (std::error_code ec = sys::fs::create_directories(outputDir))
      return fail("cannot create '" + outputDir + "': " + ec.message());
    SmallString<256> path(outputDir);
    sys::path::append(path, loaded.spec->name + ".yaml");
    return writeAtomically(path, madeSpec) ? 0 : 1;
  }
  // loom-run reads the spec from a file: the made one goes to a temporary
  // one, removed as loomc leaves.
  std::optional<FileRemover> madeSpecFile;
  if (!madeSpec.empty() && runProgram) {
    SmallString<256> path;
    if (sys::fs::createTemporaryFile("loomc-hf", "yaml", path) ||
        !writeAtomically(path, madeSpec))
      return fail("cannot write the made spec to a temporary file");
    madeSpecFile.emplace(path);
    specPath.setValue(std::string(path));
  }
  loom::spec::Spec spec = *loaded.spec;
  if (!spec.targets.empty() &&
      std::find(spec.targets.begin(), spec.targets.end(),
                targetName.getValue()) == spec.targets.end()) {
    errs() << specPath << ": error: spec '" << spec.name
           << "' does not list target '" << targetName << "' in 'targets'\n";
    return 1;
  }
  if (auto *decoder = std::get_if<loom::spec::DecoderSpec>(&spec.family)) {
    int64_t layers = layersOverride > 0 ? layersOverride.getValue()
                     : runProgram      ? std::min<int64_t>(2, decoder->layers)
                                       : decoder->layers;
    if (layers > decoder->layers)
      return fail("--layers=" + Twine(layers) + " exceeds the spec's " +
                  Twine(decoder->layers) + " layers");
    if (layers != decoder->layers)
      errs() << "loomc: note: compiling " << layers << " of "
             << decoder->layers << " layers (--layers)\n";
    decoder->layers = layers;
  } else if (layersOverride > 0) {
    return fail("--layers applies to decoder specs only");
  }

  const GpuBackend *gpu = gpuBackendFor(chip->vendor);
  if (runProgram) {
    // Ask the runtime for the device before spending minutes compiling.
    if (gpu)
      if (int rc = probeDevice(argv[0], gpu->runtimeDevice))
        return rc;
    emitKind = Emit::Artifact;
  }
  bool needsCode = emitKind == Emit::Source || emitKind == Emit::Artifact;
  if (emitKind == Emit::Artifact && outputDir.empty() && !runProgram)
    return fail("--emit=artifact writes files: give an output directory with -o");

  mlir::MLIRContext context;
  context.getOrLoadDialect<mlir::loom::LoomDialect>();
  mlir::OwningOpRef<mlir::ModuleOp> module = loom::buildGraph(context, spec, *chip);
  if (!module)
    return fail("the graph built from '" +
                (hfConfig.empty() ? specPath : hfConfig) +
                "' does not verify (diagnostics above)");

  std::string stem = spec.name + "." + targetName;
  Outputs outputs;
  if (emitKind == Emit::Graph) {
    outputs.files.push_back({stem + ".mlir", printModule(*module)});
  } else {
    mlir::PassManager pm(&context);
    mlir::loom::PipelineOptions options;
    options.scheduleMode = scheduleMode;
    options.fuseRmsNorm = fuseRmsNorm;
    mlir::loom::buildLoomPipeline(pm, options);
    if (mlir::failed(pm.run(*module)))
      return fail("the Loom pipeline failed on '" + specPath + "' (diagnostics above)");
    if (emitKind == Emit::Scheduled)
      outputs.files.push_back({stem + ".scheduled.mlir", printModule(*module)});
  }

  mlir::loom::GraphOp graph;
  mlir::loom::DeviceKernelInfo kernelInfo;
  kernelInfo.profile = profileTasks;
  kernelInfo.shareTileFunctions = shareTileFunctions;
  kernelInfo.prefetchBudget = l2Prefetch;
  kernelInfo.trustMeta = trustMeta;
  if (needsCode) {
    graph = *module->getOps<mlir::loom::GraphOp>().begin();
    std::string source;
    if (mlir::failed(gpu ? gpu->emitKernel(graph, source, kernelInfo)
                         : mlir::loom::emitHostProgram(graph, source,
                                                       trustMeta)))
      return fail("code emission failed (diagnostics above)");
    outputs.files.push_back({stem + (gpu ? gpu->sourceExt : ".cpp"), source});
    if (emitKind == Emit::Artifact) {
      auto table = mlir::loom::TaskTable::build(graph);
      json::Object metadata = table->metadataJson();
      metadata["meta_checks"] = !trustMeta;
      if (gpu)
        metadata["launch"] = json::Object{
            {"kernel", kernelInfo.kernelName},
            {"arch", chip->arch},
            {"code_object", stem + "." + gpu->codeObjectKind},
            {"grid", json::Array{table->workers, 1, 1}},
            {"block", json::Array{kernelInfo.threadsPerBlock, 1, 1}},
            {"dynamic_shared_bytes", kernelInfo.dynamicSmemBytes},
            {"cooperative", true},
            {"bodies", kernelInfo.bodies},
            {"l2_prefetch_bytes",
             std::max<int64_t>(0, kernelInfo.prefetchBudget)},
            {"inline_bindings", kernelInfo.inlineBindings}};
      metadata["build"] = buildJson(gpu);
      std::string text;
      raw_string_ostream os(text);
      mlir::loom::printMetadataJson(os, json::Value(std::move(metadata)));
      outputs.files.push_back({stem + ".json", text});
    }
  }

  // Without -o, a text form goes to stdout.
  if (outputDir.empty() && !runProgram) {
    outs() << outputs.files.front().second;
    return 0;
  }

  SmallString<256> dir(outputDir);
  if (dir.empty() &&
      sys::fs::createUniqueDirectory("loomc-" + stem, dir))
    return fail("cannot create a temporary directory");
  if (std::error_code ec = sys::fs::create_directories(dir))
    return fail("cannot create '" + dir + "': " + ec.message());
  auto pathOf = [&](StringRef name) {
    SmallString<256> path(dir);
    sys::path::append(path, name);
    return std::string(path);
  };

  std::string library;
  if (emitKind == Emit::Artifact) {
    // Build from temporaries; nothing named after the spec exists until
    // every step has succeeded.
    std::vector<std::string> temporaries;
    auto cleanup = [&] {
      for (const std::string &path : temporaries)
        sys::fs::remove(path);
    };
    auto writeTemp = [&](StringRef name, StringRef text) {
      std::string path = pathOf(name);
      temporaries.push_back(path);
      return writeAtomically(path, text) ? path : std::string();
    };
    std::string hostSource, error;
    std::string codeObject =
        gpu ? pathOf(stem + "." + gpu->codeObjectKind) : std::string();
    if (gpu) {
      std::string src =
          writeTemp(stem + ".tmp" + gpu->sourceExt, outputs.files[0].second);
      std::string report;
      temporaries.push_back(codeObject + ".tmp");
      if (src.empty() || !gpu->compile(src, codeObject + ".tmp", chip->arch,
                                       kernelsRoot, report, error)) {
        cleanup();
        return fail(error.empty() ? "cannot write the kernel source" : error);
      }
      outputs.files.push_back({stem + gpu->reportExt, report});
      // The library embeds the code object's bytes when it is compiled, so
      // the temporary path is all it needs.
      if (mlir::failed(gpu->emitHostLibrary(graph, kernelInfo,
                                            codeObject + ".tmp", hostSource))) {
        cleanup();
        return fail("host library emission failed (diagnostics above)");
      }
      outputs.files.push_back({stem + ".host.cpp", hostSource});
    } else {
      hostSource = outputs.files[0].second;
    }
    std::string tmpSource = writeTemp(stem + ".tmp.cpp", hostSource);
    std::string tmpLibrary = pathOf(stem + ".so.tmp");
    temporaries.push_back(tmpLibrary);
    if (tmpSource.empty() ||
        !loom::compileSharedLibrary(tmpSource, tmpLibrary, kernelsRoot, error)) {
      cleanup();
      return fail(error.empty() ? "cannot write the program source" : error);
    }
    library = pathOf(stem + ".so");
    std::error_code ec = sys::fs::rename(tmpLibrary, library);
    if (!ec && gpu)
      ec = sys::fs::rename(codeObject + ".tmp", codeObject);
    cleanup();
    if (ec)
      return fail("cannot write the artifact into '" + dir + "': " + ec.message());
  }
  for (auto &[name, text] : outputs.files)
    if (!writeAtomically(pathOf(name), text))
      return 1;

  if (!runProgram)
    return 0;
  int rc = runChecked(argv[0], spec, library);
  if (outputDir.empty()) // a directory of our own: leave nothing behind
    sys::fs::remove_directories(dir);
  return rc;
}
