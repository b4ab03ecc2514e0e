//===- Workloads.cpp - Read bench/workloads/ and the specs it needs -------===//
//
// yaml-cpp reads both the YAML files and the trace's JSON lines (JSON is a
// subset of YAML's flow style), so one set of checked getters serves all
// four files. Each getter records its own diagnostic and the caller carries
// on, so one run reports every problem.
//
//===----------------------------------------------------------------------===//
#include "bench/model/Workloads.h"

#include "bench/model/Lengths.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace loom::model {
namespace {

/// Diagnostics of one file; `lineOffset` shifts marks of a node parsed from
/// one line of a JSON-lines file.
struct Diags {
  std::string file;
  std::vector<spec::Diagnostic> &out;
  int lineOffset = 0;

  void error(const YAML::Mark &mark, const std::string &message) const {
    int line = mark.is_null() ? 1 : std::max(mark.line, 0) + 1 + lineOffset;
    int column = mark.is_null() ? 1 : std::max(mark.column, 0) + 1;
    out.push_back({file, line, column, message});
  }
  /// Sets w.file and w.line to where `node` is written.
  void place(Workload &w, const YAML::Node &node) const {
    w.file = file;
    w.line = node.Mark().is_null() ? 1 : node.Mark().line + 1 + lineOffset;
  }
};

/// Reports every key of `map` not in `allowed`.
void checkKeys(const YAML::Node &map, const std::set<std::string> &allowed,
               const Diags &d, const std::string &what) {
  for (const auto &entry : map) {
    std::string key = entry.first.Scalar();
    if (!allowed.count(key))
      d.error(entry.first.Mark(), "unknown key '" + key + "' in " + what);
  }
}

std::optional<int64_t> readInt(const YAML::Node &map, const std::string &key,
                               const Diags &d, const std::string &what,
                               int64_t min) {
  YAML::Node node = map[key];
  if (!node) {
    d.error(map.Mark(), "missing key '" + key + "' in " + what);
    return std::nullopt;
  }
  try {
    int64_t value = node.as<int64_t>();
    if (value < min) {
      d.error(node.Mark(), "'" + key + "' must be >= " + std::to_string(min) +
                               ", got " + node.Scalar());
      return std::nullopt;
    }
    return value;
  } catch (const YAML::Exception &) {
    d.error(node.Mark(), "'" + key + "' must be an integer in " + what);
    return std::nullopt;
  }
}

std::optional<std::string> readString(const YAML::Node &map,
                                      const std::string &key, const Diags &d,
                                      const std::string &what) {
  YAML::Node node = map[key];
  if (!node || !node.IsScalar() || node.Scalar().empty()) {
    d.error(node ? node.Mark() : map.Mark(),
            "'" + key + "' must be a non-empty string in " + what);
    return std::nullopt;
  }
  return node.Scalar();
}

bool readBool(const YAML::Node &map, const std::string &key, const Diags &d) {
  YAML::Node node = map[key];
  if (!node)
    return false;
  try {
    return node.as<bool>();
  } catch (const YAML::Exception &) {
    d.error(node.Mark(), "'" + key + "' must be true or false");
    return false;
  }
}

/// A list of integers >= `min`.
std::optional<std::vector<int64_t>> readIntList(const YAML::Node &node,
                                                const Diags &d,
                                                const std::string &key,
                                                int64_t min) {
  std::vector<int64_t> values;
  bool ok = true;
  for (const YAML::Node &item : node) {
    try {
      int64_t v = item.as<int64_t>();
      if (v < min) {
        d.error(item.Mark(), "every entry of '" + key + "' must be >= " +
                                 std::to_string(min) + ", got " + item.Scalar());
        ok = false;
      }
      values.push_back(v);
    } catch (const YAML::Exception &) {
      d.error(item.Mark(), "every entry of '" + key + "' must be an integer");
      ok = false;
    }
  }
  if (!ok)
    return std::nullopt;
  return values;
}

/// Parses a whole YAML file; false (with a diagnostic) if it cannot.
bool loadFile(const std::string &path, YAML::Node &root, const Diags &d) {
  std::ifstream in(path);
  if (!in) {
    d.out.push_back({path, 1, 1, "cannot open the file"});
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  try {
    root = YAML::Load(text.str());
    return true;
  } catch (const YAML::Exception &e) {
    d.error(e.mark, e.msg);
    return false;
  }
}

/// Loads a spec of the expected family; false after its diagnostics.
template <typename FamilySpec>
bool loadSpec(const std::string &path, FamilySpec &family,
              std::vector<spec::Diagnostic> &out) {
  spec::LoadResult loaded = spec::loadSpecFile(path);
  if (!loaded.ok()) {
    out.insert(out.end(), loaded.errors.begin(), loaded.errors.end());
    return false;
  }
  if (const auto *f = std::get_if<FamilySpec>(&loaded.spec->family)) {
    family = *f;
    return true;
  }
  out.push_back({path, 1, 1,
                 std::string("the model needs a spec of another family here, "
                             "this one is ") +
                     spec::familyName(*loaded.spec)});
  return false;
}

/// The MLA shape of a spec.
MlaShape mlaShape(const spec::MlaDecodeSpec &m) {
  MlaShape s;
  s.numHeads = m.numHeads;
  s.headDimCkv = m.headDimCkv;
  s.headDimKpe = m.headDimKpe;
  s.pageSize = m.pageSize;
  s.dtype = m.dtype;
  return s;
}

void readTrace(const std::string &path, const MlaShape &shape,
               WorkloadSet &set) {
  std::ifstream in(path);
  if (!in) {
    set.errors.push_back({path, 1, 1, "cannot open the file"});
    return;
  }
  std::string line;
  int64_t index = 0;
  for (int lineNo = 0; std::getline(in, line); ++lineNo) {
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    Diags ld{path, set.errors, lineNo};
    YAML::Node row;
    try {
      row = YAML::Load(line);
    } catch (const YAML::Exception &e) {
      ld.error(e.mark, e.msg);
      continue;
    }
    const std::string what = "trace workload " + std::to_string(index);
    if (!row.IsMap()) {
      ld.error(row.Mark(), what + " must be a JSON object");
      continue;
    }
    checkKeys(row, {"batch", "total", "contig", "uuid", "kv_lens"}, ld, what);
    auto batch = readInt(row, "batch", ld, what, 1);
    auto uuid = readString(row, "uuid", ld, what);
    std::optional<std::vector<int64_t>> lens;
    if (!row["kv_lens"] || !row["kv_lens"].IsSequence())
      ld.error(row.Mark(), "'kv_lens' must be a list in " + what);
    else
      lens = readIntList(row["kv_lens"], ld, "kv_lens", 0);
    if (!batch || !uuid || !lens) {
      ++index;
      continue;
    }
    if (int64_t(lens->size()) != *batch)
      ld.error(row["kv_lens"].Mark(),
               "'kv_lens' has " + std::to_string(lens->size()) +
                   " entries, 'batch' says " + std::to_string(*batch));
    int64_t sum = 0;
    for (int64_t len : *lens)
      sum += len;
    if (row["total"]) {
      auto total = readInt(row, "total", ld, what, 0);
      if (total && *total != sum)
        ld.error(row["total"].Mark(), "'total' is " + std::to_string(*total) +
                                          ", the kv_lens sum to " +
                                          std::to_string(sum));
    }
    Workload w;
    w.family = Family::MlaDecode;
    w.set = "trace";
    w.index = index;
    w.name = *uuid;
    w.key = "mla_decode/trace/" + std::to_string(index) + "/" + *uuid;
    w.file = path;
    w.line = lineNo + 1;
    w.lengths = *lens;
    w.batch = *batch;
    w.mla = shape;
    set.workloads.push_back(std::move(w));
    ++index;
  }
}

void readTiers(const std::string &path, const MlaShape &base,
               WorkloadSet &set) {
  Diags d{path, set.errors};
  YAML::Node root;
  if (!loadFile(path, root, d))
    return;
  if (!root.IsMap() || !root["tiers"] || !root["tiers"].IsSequence()) {
    d.error(root.Mark(), "expected a top-level 'tiers' list");
    return;
  }
  checkKeys(root, {"tiers"}, d, "the tiers file");
  std::set<std::string> names;
  for (const YAML::Node &tier : root["tiers"]) {
    if (!tier.IsMap()) {
      d.error(tier.Mark(), "a tier must be a mapping");
      continue;
    }
    checkKeys(tier, {"name", "num_heads", "page_size", "workloads"}, d, "a tier");
    auto name = readString(tier, "name", d, "a tier");
    std::string what = "tier '" + name.value_or("?") + "'";
    auto heads = readInt(tier, "num_heads", d, what, 1);
    auto pageSize = readInt(tier, "page_size", d, what, 1);
    if (name && !names.insert(*name).second)
      d.error(tier["name"].Mark(), "tier '" + *name + "' is named twice");
    if (!tier["workloads"] || !tier["workloads"].IsSequence()) {
      d.error(tier.Mark(), "'workloads' must be a list in " + what);
      continue;
    }
    int64_t index = 0;
    for (const YAML::Node &entry : tier["workloads"]) {
      std::string ewhat = what + " workload " + std::to_string(index);
      if (!entry.IsMap()) {
        d.error(entry.Mark(), ewhat + " must be a mapping");
        ++index;
        continue;
      }
      checkKeys(entry, {"batch", "lengths", "contiguous"}, d, ewhat);
      readBool(entry, "contiguous", d); // page placement: no effect on bytes
      auto batch = readInt(entry, "batch", d, ewhat, 1);
      YAML::Node lens = entry["lengths"];
      Workload w;
      bool ok = name && heads && pageSize && batch;
      if (!lens) {
        d.error(entry.Mark(), "missing key 'lengths' in " + ewhat);
        ok = false;
      } else if (lens.IsSequence()) {
        auto list = readIntList(lens, d, "lengths", 0);
        if (list && batch && int64_t(list->size()) != *batch) {
          d.error(lens.Mark(), "'lengths' has " + std::to_string(list->size()) +
                                   " entries, 'batch' says " +
                                   std::to_string(*batch));
          ok = false;
        }
        if (list)
          w.lengths = *list;
        ok = ok && list;
      } else if (lens.IsScalar() && batch) {
        std::string error;
        w.lengthsGiven = lens.Scalar();
        if (!expandRequestLengths(lens.Scalar(), *batch, w.lengths, error)) {
          d.error(lens.Mark(), error);
          ok = false;
        }
      } else {
        if (!lens.IsScalar())
          d.error(lens.Mark(), "'lengths' must be a list or a generator string");
        ok = false;
      }
      if (ok) {
        w.family = Family::MlaDecode;
        w.set = *name;
        w.index = index;
        w.key = "mla_decode/" + *name + "/" + std::to_string(index);
        d.place(w, entry);
        w.batch = *batch;
        w.mla = base;
        w.mla.numHeads = *heads;
        w.mla.pageSize = *pageSize;
        set.workloads.push_back(std::move(w));
      }
      ++index;
    }
  }
}

void readKda(const std::string &path, const KdaShape &base, WorkloadSet &set) {
  Diags d{path, set.errors};
  YAML::Node root;
  if (!loadFile(path, root, d))
    return;
  if (!root.IsMap() || !root["workloads"] || !root["workloads"].IsSequence()) {
    d.error(root.Mark(), "expected a top-level 'workloads' list");
    return;
  }
  checkKeys(root, {"workloads"}, d, "the KDA file");
  int64_t index = 0;
  for (const YAML::Node &entry : root["workloads"]) {
    std::string what = "KDA workload " + std::to_string(index);
    if (!entry.IsMap()) {
      d.error(entry.Mark(), what + " must be a mapping");
      ++index;
      continue;
    }
    checkKeys(entry, {"name", "lengths", "heads", "initial_state"}, d, what);
    auto name = readString(entry, "name", d, what);
    auto heads = readInt(entry, "heads", d, what, 1);
    bool initialState = readBool(entry, "initial_state", d);
    Workload w;
    bool ok = name && heads;
    YAML::Node lens = entry["lengths"];
    if (lens && lens.IsSequence()) {
      auto list = readIntList(lens, d, "lengths", 1);
      if (list && list->empty()) {
        d.error(lens.Mark(), "'lengths' must not be empty");
        ok = false;
      }
      if (list)
        w.lengths = *list;
      ok = ok && list;
    } else if (lens && lens.IsScalar()) {
      std::string error;
      w.lengthsGiven = lens.Scalar();
      if (!expandSequenceLengths(lens.Scalar(), w.lengths, error)) {
        d.error(lens.Mark(), error);
        ok = false;
      }
    } else {
      d.error(lens ? lens.Mark() : entry.Mark(),
              "'lengths' must be a list or 'uniform:COUNTxLEN' in " + what);
      ok = false;
    }
    if (ok) {
      w.family = Family::KdaPrefill;
      w.set = "kda_prefill";
      w.index = index;
      w.name = *name;
      w.key = "kda_prefill/" + *name;
      d.place(w, entry);
      w.batch = int64_t(w.lengths.size());
      w.kda = base;
      w.kda.numHeads = *heads;
      w.kda.initialState = initialState;
      set.workloads.push_back(std::move(w));
    }
    ++index;
  }
}

void readDecoders(const std::string &path, const std::string &configsDir,
                  WorkloadSet &set) {
  Diags d{path, set.errors};
  YAML::Node root;
  if (!loadFile(path, root, d))
    return;
  if (!root.IsMap() || !root["workloads"] || !root["workloads"].IsSequence()) {
    d.error(root.Mark(), "expected a top-level 'workloads' list");
    return;
  }
  checkKeys(root, {"workloads"}, d, "the decoder file");
  std::map<std::string, std::optional<spec::DecoderSpec>> models;
  int64_t index = 0;
  for (const YAML::Node &entry : root["workloads"]) {
    std::string what = "decoder workload " + std::to_string(index);
    if (!entry.IsMap()) {
      d.error(entry.Mark(), what + " must be a mapping");
      ++index;
      continue;
    }
    checkKeys(entry, {"model", "layers", "batch", "context"}, d, what);
    auto model = readString(entry, "model", d, what);
    auto layers = readInt(entry, "layers", d, what, 1);
    auto batch = readInt(entry, "batch", d, what, 1);
    auto context = readInt(entry, "context", d, what, 1);
    if (model && !models.count(*model)) {
      spec::DecoderSpec spec;
      std::string specPath = configsDir + "/decoder/" + *model + ".yaml";
      size_t before = set.errors.size();
      if (loadSpec(specPath, spec, set.errors))
        models[*model] = spec;
      else
        models[*model] = std::nullopt;
      if (set.errors.size() != before)
        d.error(entry["model"].Mark(),
                "no usable spec for model '" + *model + "' (" + specPath + ")");
    }
    if (model && layers && batch && context && models[*model]) {
      Workload w;
      w.family = Family::Decoder;
      w.set = "decoder";
      w.index = index;
      w.name = *model;
      w.key = "decoder/" + *model + "/layers=" + std::to_string(*layers) +
              "/batch=" + std::to_string(*batch) +
              "/context=" + std::to_string(*context);
      d.place(w, entry);
      w.decoder = *models[*model];
      w.decoder.layers = *layers;
      w.batch = *batch;
      w.context = *context;
      w.lengths.assign(size_t(*batch), *context);
      set.workloads.push_back(std::move(w));
    }
    ++index;
  }
}

} // namespace

const char *familyName(Family family) {
  switch (family) {
  case Family::MlaDecode:
    return "mla_decode";
  case Family::KdaPrefill:
    return "kda_prefill";
  case Family::Decoder:
    return "decoder";
  }
  return "?";
}

int64_t Workload::totalLength() const {
  int64_t total = 0;
  for (int64_t len : lengths)
    total += len;
  return total;
}

Cost Workload::cost() const {
  switch (family) {
  case Family::MlaDecode:
    return mlaDecodeCost(mla, lengths);
  case Family::KdaPrefill:
    return kdaPrefillCost(kda, lengths);
  case Family::Decoder:
    return decoderCost(decoder, batch, context);
  }
  return {};
}

WorkloadSet loadWorkloads(const std::string &workloadsDir,
                          const std::string &configsDir) {
  WorkloadSet set;
  spec::MlaDecodeSpec mlaSpec;
  if (loadSpec(configsDir + "/mla_decode/deepseek_v3_tp8.yaml", mlaSpec,
               set.errors)) {
    MlaShape shape = mlaShape(mlaSpec);
    readTrace(workloadsDir + "/mla_decode_trace47.jsonl", shape, set);
    readTiers(workloadsDir + "/mla_decode_tiers.yaml", shape, set);
  }
  spec::KdaPrefillSpec kdaSpec;
  if (loadSpec(configsDir + "/kda_prefill/kimi_linear_48b.yaml", kdaSpec,
               set.errors)) {
    KdaShape shape;
    shape.headDimK = kdaSpec.headDimK;
    shape.headDimV = kdaSpec.headDimV;
    shape.chunkSize = kdaSpec.chunkSize;
    shape.dtype = kdaSpec.dtype;
    readKda(workloadsDir + "/kda_prefill.yaml", shape, set);
  }
  readDecoders(workloadsDir + "/decoder.yaml", configsDir, set);

  std::set<std::string> keys;
  for (const Workload &w : set.workloads)
    if (!keys.insert(w.key).second)
      set.errors.push_back(
          {w.file, w.line, 1, "workload key '" + w.key + "' is not unique"});
  return set;
}

} // namespace loom::model
