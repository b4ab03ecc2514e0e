//===- Check.cpp - Session, launch loop and report of LoomCheck -----------===//
#include "tools/check/CheckInternal.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace loom::check {
namespace detail {

[[noreturn]] void fail(const std::string &message) {
  throw std::runtime_error(message);
}

int32_t elemOf(loom::spec::DType dtype) {
  switch (dtype) {
  case loom::spec::DType::BF16:
    return LOOM_ELEM_BF16;
  case loom::spec::DType::F16:
    return LOOM_ELEM_F16;
  case loom::spec::DType::F32:
    return LOOM_ELEM_F32;
  }
  return LOOM_ELEM_F32;
}

namespace {
const char *roleName(int32_t role) {
  switch (role) {
  case LOOM_ROLE_INPUT:
    return "input";
  case LOOM_ROLE_WEIGHT:
    return "weight";
  case LOOM_ROLE_CACHE:
    return "cache";
  case LOOM_ROLE_OUTPUT:
    return "output";
  case LOOM_ROLE_META:
    return "meta";
  }
  return "?";
}

std::string shapeString(int32_t elem, const std::vector<int64_t> &dims) {
  std::string s = std::string(elemName(elem)) + "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + (dims[i] < 0 ? std::string("?") : std::to_string(dims[i]));
  return s + "]";
}

std::string describeBuffer(const LoomBufferDesc &d) {
  std::vector<int64_t> dims(d.dims, d.dims + d.rank);
  return std::string(roleName(d.role)) + " " + shapeString(d.elem, dims);
}

std::string humanBytes(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
  return buf;
}
} // namespace

//===----------------------------------------------------------------------===//
// Session
//===----------------------------------------------------------------------===//

Session::Session(const RunOptions &options, const std::string &programPath)
    : device_([&] {
        try {
          return loomrt::Device(options.device.c_str());
        } catch (const loomrt::Error &e) {
          fail("cannot open device '" + options.device + "': " + e.what());
        }
      }()),
      path_(programPath) {
  try {
    program_ = device_.load(programPath);
  } catch (const loomrt::Error &e) {
    fail("cannot load program '" + programPath + "': " + e.what());
  }
  if (options.watchdogMs > 0)
    program_.setWatchdogMs(uint32_t(options.watchdogMs));
  if (options.queued) {
    try {
      program_.setQueuedLaunch(true);
    } catch (const loomrt::Error &e) {
      fail("--timing=queued: " + std::string(e.what()));
    }
  }
}

Session::~Session() {
  program_.reset(); // programs before their device; then free the memory
  buffers_.clear();
}

void Session::expectBuffers(const std::vector<ExpectedBuffer> &expected,
                            const std::string &what) {
  std::vector<std::string> problems;
  int32_t n = program_.numBuffers();
  std::vector<bool> seen(size_t(n), false);
  for (const ExpectedBuffer &e : expected) {
    int32_t index = -1;
    if (loomrt_program_find_buffer(program_.get(), e.name.c_str(), &index) !=
        LOOMRT_SUCCESS) {
      problems.push_back("buffer '" + e.name + "' (" + roleName(e.role) + " " +
                         shapeString(e.elem, e.dims) +
                         ") is missing from the program");
      continue;
    }
    seen[size_t(index)] = true;
    const LoomBufferDesc &d = program_.buffer(index);
    std::vector<int64_t> dims(d.dims, d.dims + d.rank);
    for (int64_t &x : dims)
      x = x < 0 ? -1 : x;
    if (d.role != e.role || d.elem != e.elem || dims != e.dims)
      problems.push_back("buffer '" + e.name + "': the program has " +
                         describeBuffer(d) + ", the spec gives " +
                         roleName(e.role) + " " + shapeString(e.elem, e.dims));
  }
  for (int32_t i = 0; i < n; ++i)
    if (!seen[size_t(i)]) {
      const LoomBufferDesc &d = program_.buffer(i);
      problems.push_back("the program has buffer '" + std::string(d.name) +
                         "' (" + describeBuffer(d) + ") that the spec lacks");
    }
  if (!problems.empty()) {
    std::string msg = "program '" + path_ + "' does not match " + what + ":";
    for (const std::string &p : problems)
      msg += "\n  " + p;
    msg += "\n(was it compiled from this spec, with the same layers?)";
    fail(msg);
  }
}

const LoomBufferDesc &Session::desc(const std::string &name) const {
  int32_t index = -1;
  if (loomrt_program_find_buffer(program_.get(), name.c_str(), &index) !=
      LOOMRT_SUCCESS)
    fail("program has no buffer '" + name + "'");
  return program_.buffer(index);
}

int64_t Session::bound(const std::string &name) const {
  return desc(name).bound;
}

void *Session::allocate(const std::string &name, size_t bytes) {
  const LoomBufferDesc &d = desc(name);
  Buffer &b = buffers_[name];
  b.output = d.role == LOOM_ROLE_OUTPUT;
  b.role = d.role;
  b.bytes = std::max<size_t>(bytes, 1);
  size_t total = b.bytes + (b.output ? kGuardBytes : 0);
  try {
    b.memory = device_.alloc(total);
  } catch (const loomrt::Error &e) {
    fail("cannot allocate " + humanBytes(double(total)) + " for buffer '" +
         name + "': " + e.what());
  }
  return b.memory.get();
}

void *Session::ptr(const std::string &name) const {
  auto it = buffers_.find(name);
  if (it == buffers_.end())
    fail("internal: buffer '" + name + "' was not allocated");
  return it->second.memory.get();
}

size_t Session::bytes(const std::string &name) const {
  auto it = buffers_.find(name);
  return it == buffers_.end() ? 0 : it->second.bytes;
}

void Session::upload(const std::string &name, const void *src, size_t bytes,
                     size_t offsetBytes) {
  if (bytes == 0)
    return;
  if (offsetBytes + bytes > this->bytes(name))
    fail("internal: upload of " + std::to_string(bytes) + " bytes at " +
         std::to_string(offsetBytes) + " overflows buffer '" + name + "'");
  device_.copy(static_cast<char *>(ptr(name)) + offsetBytes, src, bytes);
}

HostTensor Session::download(const std::string &name, int32_t elem,
                             std::vector<int64_t> dims, size_t offsetBytes) {
  HostTensor t(elem, std::move(dims));
  if (t.sizeBytes() == 0)
    return t;
  if (offsetBytes + t.sizeBytes() > bytes(name))
    fail("internal: download overflows buffer '" + name + "'");
  device_.copy(t.data(), static_cast<char *>(ptr(name)) + offsetBytes,
               t.sizeBytes());
  return t;
}

void Session::setMeta(const std::string &name, int64_t index, int64_t value) {
  auto it = buffers_.find(name);
  if (it == buffers_.end() || it->second.role != LOOM_ROLE_META)
    fail("--set-meta: '" + name + "' is not a meta buffer of the program");
  const int32_t elem = desc(name).elem;
  const size_t es = loomrt_elem_bytes(elem);
  if (elem != LOOM_ELEM_I32 && elem != LOOM_ELEM_I64)
    fail("--set-meta: '" + name + "' is not an integer buffer");
  if (index < 0 || size_t(index + 1) * es > it->second.boundBytes)
    fail("--set-meta: " + name + "[" + std::to_string(index) +
         "] is past its binding (" + std::to_string(it->second.boundBytes / es) +
         " entries this launch)");
  if (elem == LOOM_ELEM_I32) {
    if (value < INT32_MIN || value > INT32_MAX)
      fail("--set-meta: " + std::to_string(value) + " does not fit '" + name +
           "' (i32)");
    const int32_t v = int32_t(value);
    upload(name, &v, sizeof v, size_t(index) * es);
  } else {
    upload(name, &value, sizeof value, size_t(index) * es);
  }
}

void Session::bind(const std::string &name, const std::vector<int64_t> &dims) {
  const LoomBufferDesc &d = desc(name);
  Buffer &b = buffers_.at(name);
  int64_t elems = 1;
  if (dims.empty()) {
    for (int32_t i = 0; i < d.rank; ++i)
      elems *= d.dims[i];
  } else {
    for (size_t i = 0; i < dims.size(); ++i) {
      if (i < size_t(d.rank) && d.dims[i] < 0 && dims[i] > d.bound)
        fail("buffer '" + name + "' needs " + std::to_string(dims[i]) +
             " entries along its dynamic dim, the program's bound is " +
             std::to_string(d.bound));
      elems *= dims[i];
    }
  }
  b.boundBytes = size_t(elems) * elemSize(d.elem);
  if (b.boundBytes > b.bytes)
    fail("internal: buffer '" + name + "' bound beyond its allocation");
  b.boundDims = dims;
  try {
    if (dims.empty())
      program_.bind(name, b.memory.get());
    else
      program_.bind(name, b.memory.get(), dims);
  } catch (const loomrt::Error &e) {
    fail("cannot bind buffer '" + name + "': " + e.what());
  }
}

uint64_t hashBytes(const void *data, size_t bytes, uint64_t seed) {
  const auto *p = static_cast<const unsigned char *>(data);
  uint64_t h = seed ^ 0x9e3779b97f4a7c15ull ^ bytes;
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  for (; i < bytes; ++i)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h ^ (h >> 29);
}

uint64_t Session::hashRegion(const std::string &name, size_t offsetBytes,
                             size_t bytes) {
  // In chunks: a region may be a whole weight of several GiB.
  constexpr size_t kChunk = size_t(64) << 20;
  std::vector<unsigned char> buf(std::min(bytes, kChunk));
  uint64_t h = 0;
  for (size_t done = 0; done < bytes; done += kChunk) {
    size_t n = std::min(kChunk, bytes - done);
    device_.copy(buf.data(),
                 static_cast<const char *>(ptr(name)) + offsetBytes + done, n);
    h = hashBytes(buf.data(), n, h);
  }
  return h;
}

void Session::expectUnchanged(const std::string &name,
                              const HostTensor &contents, size_t offsetBytes) {
  Expectation e;
  e.name = name;
  e.offsetBytes = offsetBytes;
  e.contents = contents;
  expectations_.push_back(std::move(e));
}

void Session::expectUnchangedHash(const std::string &name, size_t offsetBytes,
                                  size_t bytes) {
  Expectation e;
  e.name = name;
  e.offsetBytes = offsetBytes;
  e.bytes = bytes;
  e.hash = hashRegion(name, offsetBytes, bytes);
  e.persistent = true;
  expectations_.push_back(std::move(e));
}

void Session::clearExpectations() {
  std::vector<Expectation> kept;
  for (Expectation &e : expectations_)
    if (e.persistent)
      kept.push_back(std::move(e));
  expectations_ = std::move(kept);
}

int64_t Session::changedInputs(std::string *where) {
  std::map<std::string, int64_t> byName;
  for (const Expectation &e : expectations_) {
    int64_t changed = 0;
    if (e.bytes) {
      changed = hashRegion(e.name, e.offsetBytes, e.bytes) != e.hash;
    } else {
      HostTensor now = download(e.name, e.contents.elem, e.contents.dims,
                                e.offsetBytes);
      for (int64_t i = 0; i < now.numel(); ++i)
        changed += now.bits(i) != e.contents.bits(i);
    }
    if (changed)
      byName[e.name] += changed;
  }
  int64_t total = 0;
  for (auto &[name, n] : byName) {
    total += n;
    if (where)
      *where += (where->empty() ? "" : ", ") + name + " (" + std::to_string(n) +
                ")";
  }
  return total;
}

void Session::poisonOutputs() {
  for (auto &[name, b] : buffers_) {
    if (!b.output)
      continue;
    const LoomBufferDesc &d = desc(name);
    size_t es = elemSize(d.elem);
    HostTensor p = poisonTensor(d.elem, int64_t((b.boundBytes + kGuardBytes) / es));
    device_.copy(b.memory.get(), p.data(), p.sizeBytes());
  }
}

int64_t Session::damagedGuards(std::string *where) {
  int64_t damaged = 0;
  for (auto &[name, b] : buffers_) {
    if (!b.output)
      continue;
    const LoomBufferDesc &d = desc(name);
    size_t es = elemSize(d.elem);
    HostTensor g(d.elem, {int64_t(kGuardBytes / es)});
    device_.copy(g.data(), static_cast<char *>(b.memory.get()) + b.boundBytes,
                 g.sizeBytes());
    int64_t here = 0;
    for (int64_t i = 0; i < g.numel(); ++i)
      here += !isPoison(g, i);
    if (here && where)
      *where += (where->empty() ? "" : ", ") + name + " (" +
                std::to_string(here) + " elements)";
    damaged += here;
  }
  return damaged;
}

int64_t Session::unwrittenOutputs(std::string *where) {
  int64_t total = 0;
  for (auto &[name, b] : buffers_) {
    if (!b.output || b.boundBytes == 0)
      continue;
    const LoomBufferDesc &d = desc(name);
    const size_t es = elemSize(d.elem);
    HostTensor t(d.elem, {int64_t(b.boundBytes / es)});
    device_.copy(t.data(), b.memory.get(), t.sizeBytes());
    const bool isFloat = d.elem == LOOM_ELEM_BF16 || d.elem == LOOM_ELEM_F16 ||
                         d.elem == LOOM_ELEM_F32;
    int64_t here = 0;
    for (int64_t i = 0; i < t.numel(); ++i)
      here += isFloat ? std::isnan(t.get(i)) : isPoison(t, i);
    if (here && where)
      *where += (where->empty() ? "" : ", ") + name + " (" +
                std::to_string(here) + " of " + std::to_string(t.numel()) +
                ")";
    total += here;
  }
  return total;
}

size_t Session::makeRotation(int copies, size_t maxBytes) {
  size_t perSet = 0;
  for (auto &[name, b] : buffers_)
    if (b.role == LOOM_ROLE_INPUT || b.role == LOOM_ROLE_CACHE ||
        b.role == LOOM_ROLE_META)
      perSet += b.bytes;
  const size_t extra = perSet * size_t(copies - 1);
  if (extra > maxBytes)
    fail("--rotate " + std::to_string(copies) + " needs " +
         humanBytes(double(extra)) + " of copies of the inputs, caches and "
         "meta buffers (" + humanBytes(double(perSet)) +
         " per set); the limit is " + humanBytes(double(maxBytes)) +
         ": use fewer copies");
  for (auto &[name, b] : buffers_) {
    if (!(b.role == LOOM_ROLE_INPUT || b.role == LOOM_ROLE_CACHE ||
          b.role == LOOM_ROLE_META))
      continue;
    b.copies.clear();
    for (int c = 1; c < copies; ++c) {
      try {
        b.copies.push_back(device_.alloc(b.bytes));
      } catch (const loomrt::Error &e) {
        fail("--rotate: cannot allocate copy " + std::to_string(c) + " of '" +
             name + "' (" + humanBytes(double(b.bytes)) + "): " + e.what());
      }
      device_.copy(b.copies.back().get(), b.memory.get(), b.bytes);
    }
  }
  rotation_ = copies;
  return perSet;
}

void Session::bindRotation(int index) {
  const int copy = index % rotation_;
  for (auto &[name, b] : buffers_) {
    if (b.copies.empty())
      continue;
    void *data = copy == 0 ? b.memory.get() : b.copies[size_t(copy - 1)].get();
    if (b.boundDims.empty())
      program_.bind(name, data);
    else
      program_.bind(name, data, b.boundDims);
  }
}

uint64_t Session::launch() {
  program_.launch();
  program_.synchronize();
  return program_.lastLaunchNs();
}

std::string Session::programSummary() const {
  const LoomProgramDesc &d = program_.desc();
  std::ostringstream os;
  os << "program " << (d.name ? d.name : "?") << " for "
     << (d.target ? d.target : "?") << " ("
     << (d.mode == LOOM_SCHEDULE_DYNAMIC ? "dynamic" : "static") << ", "
     << d.num_workers << " workers, " << d.num_tasks << " tasks, "
     << d.num_events << " events, workspace "
     << humanBytes(double(d.workspace_bytes)) << ") on "
     << device_.kind() << ": " << path_;
  return os.str();
}

} // namespace detail

//===----------------------------------------------------------------------===//
// runAndCheck
//===----------------------------------------------------------------------===//

RunReport runAndCheck(const loom::spec::Spec &spec,
                      const std::string &programPath,
                      const RunOptions &options) {
  using namespace detail;
  if (options.launches < 1)
    fail("launches must be >= 1, got " + std::to_string(options.launches));
  RunReport report;
  report.seed = options.seed ? options.seed : randomSeed();

  Session session(options, programPath);
  Rng rng(report.seed);
  std::unique_ptr<Family> family;
  auto setupStart = std::chrono::steady_clock::now();
  try {
    if (std::holds_alternative<loom::spec::MlaDecodeSpec>(spec.family))
      family = makeMlaFamily(session, spec, options);
    else if (std::holds_alternative<loom::spec::KdaPrefillSpec>(spec.family))
      family = makeKdaFamily(session, spec, options);
    else
      family = makeDecoderFamily(session, spec, options, rng);
  } catch (const loomrt::Error &e) {
    fail(std::string("runtime error while setting up: ") + e.what());
  }
  double setupS = std::chrono::duration<double>(
                      std::chrono::steady_clock::now() - setupStart)
                      .count();

  CheckSet checks;
  std::vector<double> launchMs;
  double oracleS = 0;
  // The cheap checks every launch gets, with or without the oracle.
  auto cheapChecks = [&] {
    std::string where;
    int64_t damaged = session.damagedGuards(&where);
    checks.add("guards past outputs", "elements written", 0, double(damaged),
               damaged ? "written past the bound rows of: " + where : "");
    std::string changedWhere;
    int64_t changed = session.changedInputs(&changedWhere);
    checks.add("read-only buffers kept", "elements (weights: buffers) changed",
               0, double(changed), changed ? "changed: " + changedWhere : "");
  };
  bool launched = true;
  for (int launch = 1; launch <= options.launches; ++launch) {
    Rng launchRng = rng.fork(uint64_t(launch));
    try {
      session.clearExpectations();
      family->prepare(launchRng, launch);
      session.poisonOutputs();
      for (const RunOptions::MetaEdit &e : options.metaEdits)
        session.setMeta(e.buffer, e.index, e.value);
    } catch (const loomrt::Error &e) {
      fail("runtime error while preparing launch " + std::to_string(launch) +
           ": " + e.what());
    }
    if (!options.metaEdits.empty()) {
      // The launch must fail, saying what it refused.
      try {
        session.launch();
        checks.fail("bad meta refused",
                    "launch " + std::to_string(launch) +
                        " with --set-meta succeeded: nothing was refused");
      } catch (const loomrt::Error &e) {
        const std::string why = e.what();
        if (e.status() == LOOMRT_ERROR_TASK_FAILED &&
            why.find(" refused ") != std::string::npos)
          checks.add("bad meta refused", "launches that succeeded", 0, 0,
                     "launch " + std::to_string(launch) + ": " + why);
        else
          checks.fail("bad meta refused",
                      "launch " + std::to_string(launch) + " failed (" +
                          loomrt_status_name(e.status()) +
                          ") without naming a refused value: " + why);
      }
      launched = false;
      break;
    }
    try {
      launchMs.push_back(double(session.launch()) * 1e-6);
    } catch (const loomrt::Error &e) {
      checks.fail("launch", "launch " + std::to_string(launch) + " failed (" +
                                loomrt_status_name(e.status()) + "): " +
                                e.what());
      launched = false;
      break;
    }
    auto verifyStart = std::chrono::steady_clock::now();
    try {
      if (options.oracle) {
        family->verify(checks, launch);
      } else {
        // Without the oracle: at least every output element was written
        // with a number (the poison is NaN; a kernel that skips a row or
        // produces NaN shows here).
        std::string where;
        int64_t left = session.unwrittenOutputs(&where);
        checks.add("outputs written (no NaN)", "NaN or poison elements", 0,
                   double(left), left ? "in: " + where : "");
      }
      cheapChecks();
    } catch (const loomrt::Error &e) {
      fail("runtime error while reading launch " + std::to_string(launch) +
           ": " + e.what());
    } catch (const std::runtime_error &) {
      throw;
    } catch (const std::exception &e) {
      fail("while checking launch " + std::to_string(launch) + ": " + e.what());
    }
    oracleS += std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                             verifyStart)
                   .count();
  }

  // Timed launches on the last launch's inputs, then the cheap checks once
  // more: the guards must have survived every timed launch too.
  std::ostringstream extra;
  if (options.bench > 0 && launched) {
    try {
      runBench(session, options, report, extra);
      cheapChecks();
    } catch (const loomrt::Error &e) {
      checks.fail("bench", std::string("a timed launch failed (") +
                               loomrt_status_name(e.status()) + "): " +
                               e.what());
      launched = false;
    }
  }
  if (!options.tracePath.empty() && launched)
    writeTrace(session, options,
               spec.name + " on " + session.deviceDescription(), extra);

  report.checks = checks.checks();
  report.ok = checks.ok();
  report.launchMs = median(launchMs);
  report.oracleChecked = options.oracle;

  std::ostringstream os;
  os << spec.name << " (" << loom::spec::familyName(spec) << ")\n";
  os << "  " << session.programSummary() << "\n";
  os << "  seed " << report.seed << ", " << options.launches
     << " launches; " << family->sizes() << "\n";
  if (!options.oracle)
    os << "  NOT CHECKED against the oracle (--check=none): only guards, "
          "read-only buffers and NaN/poison in the outputs were checked\n";
  os << checks.table();
  std::string per;
  for (double ms : launchMs)
    per += (per.empty() ? "" : " ") + formatNumber(ms);
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "  launch time: median %.3f ms (%s); setup %.1f s, "
                "readback + %s %.1f s\n",
                report.launchMs, per.c_str(), setupS,
                options.oracle ? "oracle" : "cheap checks", oracleS);
  os << buf;
  os << extra.str();
  if (options.oracle)
    os << (report.ok ? "PASS" : "FAIL") << " " << spec.name << " (seed "
       << report.seed << ")\n";
  else
    os << (report.ok ? "UNCHECKED" : "FAIL") << " " << spec.name << " (seed "
       << report.seed << "): outputs not compared with the oracle"
       << (report.ok ? "; the cheap checks passed" : "") << "\n";
  report.resultJson =
      resultJson(spec, session, options, report, family->sizes(), launchMs);
  report.text = os.str();
  return report;
}

} // namespace loom::check
