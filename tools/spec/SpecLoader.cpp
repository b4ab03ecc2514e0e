//===- SpecLoader.cpp - Read YAML kernel specs into Spec ------------------===//
//
// yaml-cpp gives us a node tree with source marks; this file checks it against
// the schema in configs/README.md. Checking is written so that one bad value
// never hides another: every reader call records its own diagnostic and the
// caller carries on, so a user sees all problems of a file in one run.
//
// The structure is a small MapReader that wraps one YAML mapping: typed getters
// (readInt, readFloat, ...) look keys up, check type and range, and remember
// which keys they asked for, so the keys nobody asked for can be reported as
// unknown at the end. Each family's schema is then a short list of reads plus
// the cross-field checks that single reads cannot express.
//
//===----------------------------------------------------------------------===//
#include "tools/spec/Spec.h"
#include "tools/spec/YamlProbe.h"

#include "kernels/common/BodyLimits.h"
#include "targets/chips/ChipTable.h"

#include <yaml-cpp/yaml.h>


#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace loom::spec {
namespace {

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

/// Collects diagnostics for one file, turning yaml-cpp's 0-based marks into
/// 1-based positions.
class DiagnosticSink {
public:
  explicit DiagnosticSink(std::string file) : file(std::move(file)) {}

  void error(const YAML::Mark &mark, std::string message) {
    // A null mark (-1) has no position; pin it to the start of the file rather
    // than printing line 0.
    int line = mark.is_null() ? 1 : std::max(mark.line, 0) + 1;
    int column = mark.is_null() ? 1 : std::max(mark.column, 0) + 1;
    errors.push_back({file, line, column, std::move(message)});
  }

  /// Errors come from several passes over the tree (values, then cross-field
  /// checks, then unknown keys); present them in file order. The sort is
  /// stable so errors at one position keep the order they were found in.
  /// At most kMaxErrors of them, then one that says how many were left out
  /// (at the first one left out): a mangled file gets a readable report.
  std::vector<Diagnostic> take() {
    std::stable_sort(errors.begin(), errors.end(),
                     [](const Diagnostic &a, const Diagnostic &b) {
                       return std::tie(a.line, a.column) <
                              std::tie(b.line, b.column);
                     });
    if (errors.size() > kMaxErrors) {
      Diagnostic more = errors[kMaxErrors];
      more.message = "too many errors: " + std::to_string(errors.size()) +
                     " in all, the first " + std::to_string(kMaxErrors) +
                     " shown";
      errors.resize(kMaxErrors);
      errors.push_back(std::move(more));
    }
    return std::move(errors);
  }

  static constexpr size_t kMaxErrors = 50;

private:
  std::string file;
  std::vector<Diagnostic> errors;
};

//===----------------------------------------------------------------------===//
// Text helpers
//===----------------------------------------------------------------------===//

std::string quoted(const std::string &text) { return "'" + text + "'"; }

/// How a node reads in "..., got X": the text as written for scalars, a word
/// for everything else.
std::string describe(const YAML::Node &node) {
  switch (node.Type()) {
  case YAML::NodeType::Null:
  case YAML::NodeType::Undefined:
    return "an empty value";
  case YAML::NodeType::Sequence:
    return "a sequence";
  case YAML::NodeType::Map:
    return "a mapping";
  case YAML::NodeType::Scalar:
    break;
  }
  // yaml-cpp tags quoted scalars "!"; say so, because `"16"` reads like a
  // number to a human but is a string to YAML.
  if (node.Tag() == "!")
    return "the quoted string \"" + node.Scalar() + "\"";
  return quoted(node.Scalar());
}

/// Numbers in messages about limits: "-5", "0", "1e-05".
std::string formatNumber(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

/// "a", "a or b", "a, b or c".
std::string joinAlternatives(const std::vector<std::string> &items) {
  std::string text;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0)
      text += i + 1 == items.size() ? " or " : ", ";
    text += items[i];
  }
  return text;
}

/// Levenshtein distance, for "did you mean" on misspelled keys.
size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

bool isIdentifier(const std::string &text) {
  auto isStart = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  };
  auto isDigit = [](char c) { return c >= '0' && c <= '9'; };
  if (text.empty() || !isStart(text[0]))
    return false;
  return std::all_of(text.begin() + 1, text.end(),
                     [&](char c) { return isStart(c) || isDigit(c); });
}

//===----------------------------------------------------------------------===//
// Scalar parsing
//===----------------------------------------------------------------------===//

bool isDigit(char c) { return c >= '0' && c <= '9'; }

/// Skips a run of digits from `i`; returns how many there were.
size_t skipDigits(const std::string &text, size_t &i) {
  size_t start = i;
  while (i < text.size() && isDigit(text[i]))
    ++i;
  return i - start;
}

enum class IntParse { Ok, NotAnInteger, Overflow };

/// Plain decimal integers only. yaml-cpp's own conversion would accept hex,
/// octal and, for some types, silently truncate; specs are clearer without.
IntParse parseInteger(const std::string &text, int64_t &value) {
  size_t i = 0;
  if (i < text.size() && (text[i] == '+' || text[i] == '-'))
    ++i;
  if (skipDigits(text, i) == 0 || i != text.size())
    return IntParse::NotAnInteger;
  errno = 0;
  long long parsed = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE)
    return IntParse::Overflow;
  value = parsed;
  return IntParse::Ok;
}

/// Decimal and scientific notation ("0.5", "1e-5", "500000"). strtod alone
/// would also take "inf", "nan" and hex floats, which no spec value needs.
bool parseNumber(const std::string &text, double &value) {
  size_t i = 0;
  if (i < text.size() && (text[i] == '+' || text[i] == '-'))
    ++i;
  size_t mantissaDigits = skipDigits(text, i);
  if (i < text.size() && text[i] == '.') {
    ++i;
    mantissaDigits += skipDigits(text, i);
  }
  if (mantissaDigits == 0)
    return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-'))
      ++i;
    if (skipDigits(text, i) == 0)
      return false;
  }
  if (i != text.size())
    return false;
  value = std::strtod(text.c_str(), nullptr);
  // An exponent like 1e999 overflows to infinity: not a usable number either.
  return std::isfinite(value);
}

//===----------------------------------------------------------------------===//
// Value rules
//===----------------------------------------------------------------------===//

/// What an integer key accepts. Built with the helpers below so that the
/// error message always states the rule that was checked.
struct IntRule {
  int64_t min = 0;
  int64_t max = 0;
  int64_t multipleOf = 1;
  bool powerOfTwo = false;
  std::vector<int64_t> allowed; ///< when not empty, the only values accepted

  bool accepts(int64_t value) const {
    if (!allowed.empty())
      return std::find(allowed.begin(), allowed.end(), value) != allowed.end();
    if (value < min || value > max || value % multipleOf != 0)
      return false;
    return !powerOfTwo || (value & (value - 1)) == 0;
  }

  /// Completes "'key' must be ...".
  std::string describe() const {
    if (!allowed.empty()) {
      std::vector<std::string> items;
      for (int64_t value : allowed)
        items.push_back(std::to_string(value));
      return joinAlternatives(items);
    }
    std::string range =
        "[" + std::to_string(min) + ", " + std::to_string(max) + "]";
    if (powerOfTwo)
      return "a power of two in " + range;
    if (multipleOf == 2)
      return "even and in " + range;
    if (multipleOf > 1)
      return "a multiple of " + std::to_string(multipleOf) + " in " + range;
    return "in " + range;
  }
};

constexpr int64_t kInt32Max = 2147483647;

IntRule inRange(int64_t min, int64_t max) {
  IntRule rule;
  rule.min = min;
  rule.max = max;
  return rule;
}
IntRule multipleIn(int64_t multiple, int64_t min, int64_t max) {
  IntRule rule = inRange(min, max);
  rule.multipleOf = multiple;
  return rule;
}
IntRule powerOfTwoIn(int64_t min, int64_t max) {
  IntRule rule = inRange(min, max);
  rule.powerOfTwo = true;
  return rule;
}
IntRule oneOf(std::vector<int64_t> values) {
  IntRule rule;
  rule.allowed = std::move(values);
  return rule;
}

/// What a float key accepts: an interval, each end open or closed; an
/// infinite max means no upper bound.
struct FloatRule {
  double min;
  bool minOpen;
  double max;
  bool maxOpen;

  bool accepts(double value) const {
    bool aboveMin = minOpen ? value > min : value >= min;
    bool belowMax = maxOpen ? value < max : value <= max;
    return aboveMin && belowMax;
  }

  std::string describe() const {
    if (std::isinf(max))
      return (minOpen ? "> " : ">= ") + formatNumber(min);
    return std::string("in ") + (minOpen ? "(" : "[") + formatNumber(min) +
           ", " + formatNumber(max) + (maxOpen ? ")" : "]");
  }
};

FloatRule positive() { return {0, true, HUGE_VAL, false}; }
FloatRule halfOpen(double min, double max) { return {min, false, max, true}; }

template <typename E> using EnumNames = std::vector<std::pair<const char *, E>>;

const EnumNames<DType> kDTypeNames = {
    {"bf16", DType::BF16}, {"f16", DType::F16}, {"f32", DType::F32}};
const EnumNames<KdaGate> kGateNames = {{"unbounded", KdaGate::Unbounded},
                                       {"bounded", KdaGate::Bounded}};

//===----------------------------------------------------------------------===//
// MapReader
//===----------------------------------------------------------------------===//

enum class Presence { Required, Optional };

/// Wraps one YAML mapping. Every read* call names a key of the schema: it
/// reports a missing required key, a wrong type or a value out of range, and
/// returns true when the destination holds a usable value afterwards (read,
/// or left at its default because an optional key is absent). finish()
/// reports the keys no read asked for.
class MapReader {
public:
  /// `section` names the mapping in messages; empty for the top level.
  MapReader(const YAML::Node &map, std::string section, DiagnosticSink &sink)
      : map(map), section(std::move(section)), sink(sink) {
    index();
  }

  /// The mapping's own position: where missing keys are reported.
  YAML::Mark mark() const { return map.Mark(); }

  bool has(const std::string &key) const { return find(key) != nullptr; }

  YAML::Mark keyMark(const std::string &key) const {
    const Entry *entry = find(key);
    return entry ? entry->key.Mark() : mark();
  }

  /// yaml-cpp places an empty value (`key:` then a newline) at the next
  /// token, often a line further down; point at the key instead.
  YAML::Mark valueMark(const std::string &key) const {
    const Entry *entry = find(key);
    if (!entry)
      return mark();
    return entry->value.IsNull() ? entry->key.Mark() : entry->value.Mark();
  }

  void error(const YAML::Mark &at, std::string message) {
    sink.error(at, std::move(message));
  }

  /// Schema keys that are present, in file order.
  std::vector<std::string>
  presentAmong(const std::vector<const char *> &keys) const {
    std::vector<std::string> present;
    for (const Entry &entry : entries)
      if (!entry.ignored &&
          std::find(keys.begin(), keys.end(), entry.name) != keys.end())
        present.push_back(entry.name);
    return present;
  }

  bool readInt(const char *key, int64_t &out, Presence presence,
               const IntRule &rule) {
    const Entry *entry = take(key, presence);
    if (!entry)
      return presence == Presence::Optional;
    const YAML::Node &value = entry->value;
    int64_t parsed = 0;
    IntParse status = isPlainScalar(value)
                          ? parseInteger(value.Scalar(), parsed)
                          : IntParse::NotAnInteger;
    if (status == IntParse::NotAnInteger)
      return wrongType(*entry, "an integer");
    if (status == IntParse::Overflow || !rule.accepts(parsed))
      return outOfRange(*entry, rule.describe(), value.Scalar());
    out = parsed;
    return true;
  }

  bool readFloat(const char *key, double &out, Presence presence,
                 const FloatRule &rule) {
    const Entry *entry = take(key, presence);
    if (!entry)
      return presence == Presence::Optional;
    double parsed = 0;
    if (!isPlainScalar(entry->value) ||
        !parseNumber(entry->value.Scalar(), parsed))
      return wrongType(*entry, "a number");
    if (!rule.accepts(parsed))
      return outOfRange(*entry, rule.describe(), entry->value.Scalar());
    // Every spec number becomes a 32-bit float attribute: one past its
    // range would turn into infinity, one below its smallest into zero.
    float rounded = static_cast<float>(parsed);
    if (!std::isfinite(rounded) || (parsed != 0 && rounded == 0))
      return outOfRange(*entry, "within a 32-bit float's range",
                        entry->value.Scalar());
    out = parsed;
    return true;
  }

  /// An optional float without a default: stays empty when absent.
  bool readFloat(const char *key, std::optional<double> &out,
                 const FloatRule &rule) {
    double value = 0;
    bool present = has(key);
    if (!readFloat(key, value, Presence::Optional, rule))
      return false;
    if (present)
      out = value;
    return true;
  }

  bool readBool(const char *key, bool &out) {
    const Entry *entry = take(key, Presence::Optional);
    if (!entry)
      return true;
    bool parsed = false;
    // convert<bool> takes true/false/yes/no/on/off without throwing.
    if (!isPlainScalar(entry->value) ||
        !YAML::convert<bool>::decode(entry->value, parsed))
      return wrongType(*entry, "true or false");
    out = parsed;
    return true;
  }

  bool readString(const char *key, std::string &out, Presence presence) {
    const Entry *entry = take(key, presence);
    if (!entry)
      return presence == Presence::Optional;
    if (!entry->value.IsScalar())
      return wrongType(*entry, "a string");
    out = entry->value.Scalar();
    return true;
  }

  template <typename E>
  bool readEnum(const char *key, E &out, Presence presence,
                const EnumNames<E> &names) {
    const Entry *entry = take(key, presence);
    if (!entry)
      return presence == Presence::Optional;
    if (!entry->value.IsScalar())
      return wrongType(*entry, "a string");
    for (const auto &[name, value] : names) {
      if (entry->value.Scalar() == name) {
        out = value;
        return true;
      }
    }
    std::vector<std::string> choices;
    for (const auto &name : names)
      choices.push_back(name.first);
    return outOfRange(*entry, joinAlternatives(choices),
                      describe(entry->value));
  }

  /// The value of `key` when it is a sequence; nothing when absent or wrong.
  std::optional<YAML::Node> readSequence(const char *key, Presence presence) {
    return readNode(key, presence, YAML::NodeType::Sequence, "a sequence");
  }

  /// The value of `key` when it is a mapping; nothing when absent or wrong.
  std::optional<YAML::Node> readMap(const char *key, Presence presence) {
    return readNode(key, presence, YAML::NodeType::Map, "a mapping");
  }

  /// A reader of the mapping `map` found at `key` of this one.
  MapReader nested(const YAML::Node &map, const std::string &key) {
    return MapReader(map, section.empty() ? key : section + "." + key, sink);
  }

  /// Reports every key that no read asked for, with a suggestion when one
  /// of the schema's keys is a near miss.
  void finish() {
    for (const Entry &entry : entries) {
      if (entry.consumed || entry.ignored)
        continue;
      std::string message =
          section.empty()
              ? "unknown top-level key " + quoted(entry.name)
              : "unknown key " + quoted(entry.name) + " in " + quoted(section);
      if (std::optional<std::string> near = closestKnownKey(entry.name))
        message += "; did you mean " + quoted(*near) + "?";
      error(entry.key.Mark(), message);
    }
  }

private:
  struct Entry {
    std::string name;
    YAML::Node key;
    YAML::Node value;
    bool consumed = false;
    /// A repeated or non-scalar key: reported when indexing, never
    /// looked up, never reported as unknown.
    bool ignored = false;
  };

  /// Builds the key list once; yaml-cpp keeps duplicate keys (and its lookup
  /// would silently take the first), so repeats are reported here.
  void index() {
    for (auto it = map.begin(); it != map.end(); ++it) {
      Entry entry{"", it->first, it->second};
      if (!entry.key.IsScalar()) {
        error(entry.key.Mark(),
              "keys" + in() + " must be names, got " + describe(entry.key));
        entry.ignored = true;
      } else {
        entry.name = entry.key.Scalar();
        if (!byName.emplace(entry.name, entries.size()).second) {
          error(entry.key.Mark(), "duplicate key " + quoted(entry.name) + in());
          entry.ignored = true;
        }
      }
      entries.push_back(std::move(entry));
    }
  }

  /// " in 'section'", or nothing at the top level.
  std::string in() const {
    return section.empty() ? "" : " in " + quoted(section);
  }

  const Entry *find(const std::string &key) const {
    auto it = byName.find(key);
    return it == byName.end() ? nullptr : &entries[it->second];
  }

  /// Looks `key` up, marks it known and consumed, and reports it missing if
  /// it is required.
  const Entry *take(const char *key, Presence presence) {
    known.push_back(key);
    if (auto it = byName.find(key); it != byName.end()) {
      Entry &entry = entries[it->second];
      entry.consumed = true;
      return &entry;
    }
    if (presence == Presence::Required)
      error(mark(), "missing required key " + quoted(key) + in());
    return nullptr;
  }

  std::optional<YAML::Node> readNode(const char *key, Presence presence,
                                     YAML::NodeType::value type,
                                     const char *typeName) {
    const Entry *entry = take(key, presence);
    if (!entry)
      return std::nullopt;
    if (entry->value.Type() != type) {
      wrongType(*entry, typeName);
      return std::nullopt;
    }
    return entry->value;
  }

  /// Numbers and booleans must be written plain: `"16"` is a string.
  static bool isPlainScalar(const YAML::Node &node) {
    return node.IsScalar() && node.Tag() != "!";
  }

  bool wrongType(const Entry &entry, const std::string &expected) {
    error(valueMark(entry.name), quoted(entry.name) + " must be " + expected +
                                     ", got " + describe(entry.value));
    return false;
  }

  /// Numbers are echoed as written ("got 3"), words quoted ("got 'fp8'").
  bool outOfRange(const Entry &entry, const std::string &rule,
                  const std::string &got) {
    error(valueMark(entry.name),
          quoted(entry.name) + " must be " + rule + ", got " + got);
    return false;
  }

  std::optional<std::string> closestKnownKey(const std::string &name) const {
    std::optional<std::string> best;
    size_t bestDistance = 3; // suggest only within an edit distance of 2
    for (const std::string &candidate : known) {
      size_t distance = editDistance(name, candidate);
      // A two-letter typo would otherwise "match" any short key.
      if (distance < bestDistance && distance < name.size()) {
        best = candidate;
        bestDistance = distance;
      }
    }
    return best;
  }

  YAML::Node map;
  std::string section;
  DiagnosticSink &sink;
  std::vector<Entry> entries;
  /// Index in `entries` of each key that is looked up (not the ignored
  /// ones): a spec with many keys costs no quadratic search.
  std::unordered_map<std::string, size_t> byName;
  std::vector<std::string> known; ///< schema keys asked for, in schema order
};

//===----------------------------------------------------------------------===//
// Families
//===----------------------------------------------------------------------===//

/// "'key' (value)", for messages that compare two fields.
std::string keyAndValue(const char *key, int64_t value) {
  return quoted(key) + " (" + std::to_string(value) + ")";
}
std::string keyAndValue(const char *key, double value) {
  return quoted(key) + " (" + formatNumber(value) + ")";
}

/// Every request holds at least one page, so a pool smaller than the batch
/// cannot be filled.
void checkPagesCoverBatch(MapReader &r, bool bothValid, int64_t maxBatch,
                          int64_t maxPages) {
  if (bothValid && maxPages < maxBatch)
    r.error(r.valueMark("max_pages"), keyAndValue("max_pages", maxPages) +
                                          " must be at least " +
                                          keyAndValue("max_batch", maxBatch));
}

MlaDecodeSpec parseMlaDecode(MapReader &r) {
  using P = Presence;
  MlaDecodeSpec s;
  // The largest shapes every target's bodies run (kernels/common/BodyLimits.h).
  r.readInt("num_heads", s.numHeads, P::Required, inRange(1, kMlaMaxHeads));
  r.readInt("head_dim_ckv", s.headDimCkv, P::Optional,
            multipleIn(16, 16, kMlaMaxDimCkv));
  r.readInt("head_dim_kpe", s.headDimKpe, P::Optional,
            multipleIn(8, 8, kMlaMaxDimKpe));
  r.readInt("page_size", s.pageSize, P::Required, powerOfTwoIn(1, 1024));
  r.readFloat("sm_scale", s.smScale, P::Required, positive());
  bool batch =
      r.readInt("max_batch", s.maxBatch, P::Required, inRange(1, 65536));
  bool pages =
      r.readInt("max_pages", s.maxPages, P::Required, inRange(1, kInt32Max));
  r.readEnum("dtype", s.dtype, P::Optional, kDTypeNames);
  checkPagesCoverBatch(r, batch && pages, s.maxBatch, s.maxPages);
  return s;
}

/// The bounded gate is a sigmoid squashed into [lower_bound, 0); below -5 the
/// decay underflows in bf16, at 0 there is no decay at all.
const FloatRule kLowerBoundRule = halfOpen(-5, 0);

KdaPrefillSpec parseKdaPrefill(MapReader &r) {
  using P = Presence;
  KdaPrefillSpec s;
  r.readInt("num_heads", s.numHeads, P::Required, inRange(1, 1024));
  r.readInt("head_dim_k", s.headDimK, P::Optional, multipleIn(16, 16, 512));
  r.readInt("head_dim_v", s.headDimV, P::Optional, multipleIn(16, 16, 512));
  bool gate = r.readEnum("gate", s.gate, P::Required, kGateNames);
  r.readFloat("lower_bound", s.lowerBound, kLowerBoundRule);
  r.readInt("chunk_size", s.chunkSize, P::Optional, oneOf({16, 64}));
  r.readBool("qk_l2norm", s.qkL2Norm);
  r.readBool("initial_state", s.initialState);
  r.readFloat("scale", s.scale, positive());
  bool tokens =
      r.readInt("max_tokens", s.maxTokens, P::Required, inRange(1, kInt32Max));
  bool seqs =
      r.readInt("max_seqs", s.maxSeqs, P::Required, inRange(1, kInt32Max));
  r.readEnum("dtype", s.dtype, P::Optional, kDTypeNames);

  // lower_bound belongs to the bounded gate only; a stray one would be
  // silently ignored by the unbounded kernel, so both directions are errors.
  if (gate && s.gate == KdaGate::Bounded && !r.has("lower_bound"))
    r.error(r.valueMark("gate"), "'gate: bounded' requires 'lower_bound' " +
                                     kLowerBoundRule.describe());
  if (gate && s.gate == KdaGate::Unbounded && r.has("lower_bound"))
    r.error(r.keyMark("lower_bound"), "'lower_bound' requires 'gate: bounded'");
  // Every sequence holds at least one token.
  if (tokens && seqs && s.maxSeqs > s.maxTokens)
    r.error(r.valueMark("max_seqs"),
            keyAndValue("max_seqs", s.maxSeqs) + " must not exceed " +
                keyAndValue("max_tokens", s.maxTokens));
  return s;
}

DecoderSpec parseDecoder(MapReader &r) {
  using P = Presence;
  DecoderSpec s;
  r.readInt("layers", s.layers, P::Required, inRange(1, 1024));
  r.readInt("hidden", s.hidden, P::Required, multipleIn(16, 16, 65536));
  bool qHeads =
      r.readInt("num_q_heads", s.numQHeads, P::Required, inRange(1, 1024));
  bool kvHeads =
      r.readInt("num_kv_heads", s.numKvHeads, P::Required, inRange(1, 1024));
  // Even: RoPE rotates pairs of elements.
  r.readInt("head_dim", s.headDim, P::Required, multipleIn(2, 16, 512));
  r.readInt("ffn", s.ffn, P::Required, multipleIn(16, 16, 262144));
  r.readFloat("rms_eps", s.rmsEps, P::Optional, positive());
  r.readFloat("rope_theta", s.ropeTheta, P::Optional, positive());
  if (std::optional<YAML::Node> m = r.readMap("rope_scaling", P::Optional)) {
    // Llama 3.1's (config.json's rope_scaling with rope_type "llama3").
    MapReader sr = r.nested(*m, "rope_scaling");
    DecoderSpec::RopeScaling &rs = s.ropeScaling;
    std::string type = "llama3";
    if (sr.readString("rope_type", type, P::Optional) && type != "llama3")
      sr.error(sr.valueMark("rope_type"),
               "'rope_type' " + quoted(type) +
                   " is not implemented; 'llama3' (Llama 3.1's) is");
    sr.readFloat("factor", rs.factor, P::Required, FloatRule{1, false, HUGE_VAL, false});
    bool low = sr.readFloat("low_freq_factor", rs.lowFreqFactor, P::Required,
                            positive());
    bool high = sr.readFloat("high_freq_factor", rs.highFreqFactor,
                             P::Required, positive());
    sr.readInt("original_max_position_embeddings", rs.originalMaxPosition,
               P::Required, inRange(1, kInt32Max));
    if (low && high && rs.highFreqFactor <= rs.lowFreqFactor)
      sr.error(sr.valueMark("high_freq_factor"),
               keyAndValue("high_freq_factor", rs.highFreqFactor) +
                   " must exceed " +
                   keyAndValue("low_freq_factor", rs.lowFreqFactor));
    sr.finish();
  }
  r.readBool("qk_norm", s.qkNorm);
  r.readInt("page_size", s.pageSize, P::Optional, powerOfTwoIn(1, 1024));
  bool batch =
      r.readInt("max_batch", s.maxBatch, P::Required, inRange(1, 65536));
  bool pages =
      r.readInt("max_pages", s.maxPages, P::Required, inRange(1, kInt32Max));
  r.readInt("vocab", s.vocab, P::Optional, inRange(1, kInt32Max));
  bool head = r.readBool("head", s.head);
  r.readEnum("dtype", s.dtype, P::Optional, kDTypeNames);

  // Grouped-query attention shares each KV head among a whole group of query
  // heads; a remainder has no KV head to read.
  if (qHeads && kvHeads && s.numQHeads % s.numKvHeads != 0)
    r.error(r.valueMark("num_kv_heads"),
            keyAndValue("num_q_heads", s.numQHeads) +
                " must be a multiple of " +
                keyAndValue("num_kv_heads", s.numKvHeads));
  checkPagesCoverBatch(r, batch && pages, s.maxBatch, s.maxPages);
  // The LM head's output width is the vocabulary.
  if (head && s.head && !r.has("vocab"))
    r.error(r.valueMark("head"), "'head: true' requires 'vocab'");
  return s;
}

//===----------------------------------------------------------------------===//
// Top level
//===----------------------------------------------------------------------===//

struct FamilyParser {
  const char *key;
  void (*parse)(MapReader &, Spec &);
};

const std::vector<FamilyParser> &familyParsers() {
  static const std::vector<FamilyParser> parsers = {
      {"mla_decode",
       [](MapReader &r, Spec &spec) { spec.family = parseMlaDecode(r); }},
      {"kda_prefill",
       [](MapReader &r, Spec &spec) { spec.family = parseKdaPrefill(r); }},
      {"decoder",
       [](MapReader &r, Spec &spec) { spec.family = parseDecoder(r); }},
  };
  return parsers;
}

const char *const kExactlyOneFamily =
    "a spec needs exactly one of 'mla_decode', 'kda_prefill', 'decoder'";

void parseTargets(const YAML::Node &list, Spec &spec, DiagnosticSink &sink) {
  for (const YAML::Node &item : list) {
    if (!item.IsScalar()) {
      sink.error(item.Mark(),
                 "each entry of 'targets' must be a chip name, got " +
                     describe(item));
      continue;
    }
    const std::string &name = item.Scalar();
    if (!findChip(name)) {
      sink.error(item.Mark(), "unknown target " + quoted(name) +
                                  "; known targets: " + knownChipNames());
      continue;
    }
    if (std::find(spec.targets.begin(), spec.targets.end(), name) !=
        spec.targets.end()) {
      sink.error(item.Mark(), "duplicate target " + quoted(name));
      continue;
    }
    spec.targets.push_back(name);
  }
}

/// Picks the family section(s) and parses each one present, so that a file
/// with two families still gets its other errors reported.
void parseFamilies(MapReader &top, Spec &spec, DiagnosticSink &sink) {
  std::vector<const char *> keys;
  for (const FamilyParser &family : familyParsers())
    keys.push_back(family.key);
  std::vector<std::string> present = top.presentAmong(keys);
  if (present.empty())
    top.error(top.mark(), std::string(kExactlyOneFamily) + ", found none");
  for (size_t i = 1; i < present.size(); ++i)
    top.error(top.keyMark(present[i]), std::string(kExactlyOneFamily) +
                                           "; found " + quoted(present[i]) +
                                           " after " + quoted(present[0]));

  for (const FamilyParser &family : familyParsers()) {
    // Asked even when absent, so that a misspelt family key gets a
    // suggestion.
    std::optional<YAML::Node> section =
        top.readMap(family.key, Presence::Optional);
    if (!section)
      continue;
    MapReader reader(*section, family.key, sink);
    family.parse(reader, spec);
    reader.finish();
  }
}

/// Checks one document; returns the spec it describes, which is only
/// meaningful when the sink stayed empty.
/// The position of a ',' that starts a line outside any flow collection,
/// quoted scalar or block scalar, or that follows a complete top-level flow
/// collection or quoted scalar (`{...},`), if there is one. yaml-cpp 0.7
/// loops forever (and allocates without end) on some such streams (the spec
/// fuzzer's finds, tests/fuzz/spec-corpus), so they are refused before the
/// parser sees them. Valid YAML could continue a plain scalar on a line
/// that starts with ','; no spec needs to.
std::optional<YAML::Mark> strayTopLevelComma(const std::string &text) {
  int flowDepth = 0;
  bool closed = false;        // the last token closed a top-level node
  char quote = 0;             // ' or " while inside a quoted scalar
  long blockScalarIndent = -1; // the lines of a | or > scalar are more indented
  int line = 0;
  for (size_t pos = 0; pos <= text.size(); ++line) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos)
      end = text.size();
    std::string_view row(text.data() + pos, end - pos);
    pos = end + 1;
    const size_t first = row.find_first_not_of(" \t\r");
    const long indent = first == std::string_view::npos ? -1 : long(first);
    if (blockScalarIndent >= 0) {
      if (indent < 0 || indent > blockScalarIndent)
        continue;
      blockScalarIndent = -1;
    }
    if (indent < 0)
      continue;
    // A document marker starts a line of its own: `--- ,x` too.
    size_t start = first;
    if (!quote && flowDepth == 0 && first == 0 && row.size() > 3 &&
        (row.substr(0, 3) == "---" || row.substr(0, 3) == "...") &&
        (row[3] == ' ' || row[3] == '\t'))
      start = std::min(row.size() - 1, row.find_first_not_of(" \t\r", 3));
    if (!quote && flowDepth == 0 && (row[first] == ',' || row[start] == ',')) {
      YAML::Mark mark;
      mark.line = line;
      mark.column = int(row[first] == ',' ? first : start);
      return mark;
    }
    size_t last = std::string_view::npos; // last character outside comments
    for (size_t i = first; i < row.size(); ++i) {
      const char c = row[i];
      if (quote) {
        if ((quote == '"' && c == '\\') ||
            (quote == '\'' && c == '\'' && i + 1 < row.size() &&
             row[i + 1] == '\'')) {
          ++i; // an escape: \x in "...", '' in '...'
        } else if (c == quote) {
          quote = 0;
          closed = flowDepth == 0;
        }
        continue;
      }
      if (c == '#' && (i == 0 || row[i - 1] == ' ' || row[i - 1] == '\t'))
        break;
      // `{...},` or `'x',` at the top: a ',' that follows a complete node.
      if (c == ',' && flowDepth == 0 && closed) {
        YAML::Mark mark;
        mark.line = line;
        mark.column = int(i);
        return mark;
      }
      if (c != ' ' && c != '\t' && c != '\r')
        closed = false;
      // Quotes and brackets open a node only where one can start (first on
      // the line, after `: `, `- `, `? `, or inside a flow collection after
      // `[`, `{`, `,`); in `don't` or `a[1]` they are plain characters.
      bool nodeStart = i == first;
      if (!nodeStart) {
        size_t p = row.find_last_not_of(" \t", i - 1);
        const bool spaced = p != i - 1;
        nodeStart = p != std::string_view::npos &&
                    ((flowDepth > 0 && std::strchr("[{,", row[p]) != nullptr) ||
                     (spaced && std::strchr(":-?", row[p]) != nullptr));
      }
      if ((c == '\'' || c == '"') && nodeStart)
        quote = c;
      else if ((c == '[' || c == '{') && (nodeStart || flowDepth > 0))
        ++flowDepth;
      else if ((c == ']' || c == '}') && flowDepth > 0)
        closed = --flowDepth == 0;
      if (c != ' ' && c != '\t' && c != '\r')
        last = i;
    }
    // `key: |`, `- >-`, `|2`: a block scalar's header ends the line.
    if (!quote && flowDepth == 0 && last != std::string_view::npos) {
      size_t h = last;
      while (h > first && (std::isdigit(static_cast<unsigned char>(row[h])) ||
                           row[h] == '+' || row[h] == '-'))
        --h;
      if ((row[h] == '|' || row[h] == '>') &&
          (h == first || row[h - 1] == ' ' || row[h - 1] == '\t'))
        blockScalarIndent = indent;
    }
  }
  return std::nullopt;
}

/// The position of the first control character YAML does not allow in a
/// stream (C0 other than tab, line feed and carriage return, and DEL), if
/// there is one: yaml-cpp 0.7 also loops forever on some of those.
std::optional<std::pair<YAML::Mark, unsigned char>>
controlCharacter(const std::string &text) {
  YAML::Mark mark;
  mark.line = 0;
  mark.column = 0;
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F)
      return std::make_pair(mark, c);
    if (c == '\n') {
      ++mark.line;
      mark.column = 0;
    } else {
      ++mark.column;
    }
  }
  return std::nullopt;
}

std::optional<Spec> parseDocument(const std::string &text,
                                  DiagnosticSink &sink) {
  // What yaml-cpp 0.7 never returns from is refused before it sees it.
  if (auto control = controlCharacter(text)) {
    char code[8];
    std::snprintf(code, sizeof code, "0x%02X", control->second);
    sink.error(control->first, std::string("a spec is text: control "
                                           "character ") +
                                   code + " is not allowed");
    return std::nullopt;
  }
  if (std::optional<YAML::Mark> comma = strayTopLevelComma(text)) {
    sink.error(*comma, "a ',' outside a flow collection ([...] or {...}) "
                       "starts a line or follows a complete node");
    return std::nullopt;
  }
  if (std::optional<std::string> trouble = yamlParseTrouble(text)) {
    sink.error(YAML::Mark(), *trouble);
    return std::nullopt;
  }
  std::vector<YAML::Node> documents = YAML::LoadAll(text);
  if (documents.empty() || documents[0].IsNull()) {
    sink.error(YAML::Mark(),
               "empty spec: expected a mapping with 'name' and one of "
               "'mla_decode', 'kda_prefill', 'decoder'");
    return std::nullopt;
  }
  if (documents.size() > 1)
    sink.error(documents[1].Mark(),
               "a spec file must hold a single YAML document, found " +
                   std::to_string(documents.size()));
  const YAML::Node &root = documents[0];
  if (!root.IsMap()) {
    sink.error(root.Mark(), "a spec must be a mapping at the top level, got " +
                                describe(root));
    return std::nullopt;
  }

  Spec spec;
  MapReader top(root, "", sink);
  if (top.readString("name", spec.name, Presence::Required) &&
      !isIdentifier(spec.name))
    top.error(top.valueMark("name"),
              "'name' must be a C identifier ([A-Za-z_][A-Za-z0-9_]*), got " +
                  quoted(spec.name));
  top.readString("description", spec.description, Presence::Optional);
  if (std::optional<YAML::Node> targets =
          top.readSequence("targets", Presence::Optional))
    parseTargets(*targets, spec, sink);
  parseFamilies(top, spec, sink);
  top.finish();
  return spec;
}

} // namespace

//===----------------------------------------------------------------------===//
// Public interface
//===----------------------------------------------------------------------===//

std::string Diagnostic::str() const {
  return file + ":" + std::to_string(line) + ":" + std::to_string(column) +
         ": error: " + message;
}

LoadResult parseSpec(const std::string &text, const std::string &file) {
  LoadResult result;
  try {
    DiagnosticSink sink(file);
    std::optional<Spec> spec;
    try {
      spec = parseDocument(text, sink);
    } catch (const YAML::ParserException &e) {
      sink.error(e.mark, "invalid YAML: " + e.msg);
    } catch (const YAML::Exception &e) {
      sink.error(e.mark, "cannot read YAML: " + e.msg);
    } catch (const std::exception &e) {
      sink.error(YAML::Mark::null_mark(),
                 std::string("internal error while reading spec: ") + e.what());
    }
    result.errors = sink.take();
    if (result.errors.empty())
      result.spec = std::move(spec);
  } catch (...) {
    // Only allocation can fail out here; callers are built without
    // exceptions, so even this must not escape.
    result.spec.reset();
    result.errors.clear();
    result.errors.push_back({file, 1, 1, "internal error while reading spec"});
  }
  return result;
}

LoadResult loadSpecFile(const std::string &path) {
  auto fail = [&](const char *what, int err) {
    LoadResult result;
    result.errors.push_back(
        {path, 1, 1, std::string(what) + ": " + std::strerror(err)});
    return result;
  };
  std::FILE *stream = std::fopen(path.c_str(), "rb");
  if (!stream)
    return fail("cannot open file", errno);
  std::string text;
  char buffer[4096];
  size_t count;
  while ((count = std::fread(buffer, 1, sizeof(buffer), stream)) > 0)
    text.append(buffer, count);
  // Opening a directory succeeds on Linux; reading it is what fails.
  int readError = std::ferror(stream) ? errno : 0;
  std::fclose(stream);
  if (readError)
    return fail("cannot read file", readError);
  return parseSpec(text, path);
}

const char *dtypeName(DType dtype) {
  for (const auto &[name, value] : kDTypeNames)
    if (value == dtype)
      return name;
  return "unknown";
}

const char *familyName(const Spec &spec) {
  struct KeyOf {
    const char *operator()(const MlaDecodeSpec &) const { return "mla_decode"; }
    const char *operator()(const KdaPrefillSpec &) const {
      return "kda_prefill";
    }
    const char *operator()(const DecoderSpec &) const { return "decoder"; }
  };
  return std::visit(KeyOf(), spec.family);
}

} // namespace loom::spec
