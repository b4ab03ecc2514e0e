//===- CheckTestProgram.cpp - A tiny mla_decode program for CheckTest -----===//
//
// A hand-written host program with the buffers BuildGraph gives a small
// mla_decode spec (H = 2, Dc = 16, Dp = 8, page size 4, max_batch 8,
// max_pages 64, bf16), computed by one task with plain float loops. Built
// once per variant so CheckTest can show that LoomCheck passes the right one
// and fails each wrong one:
//   LOOM_CHECK_PROG_GOOD      correct;
//   LOOM_CHECK_PROG_WRONG     o of request 2, head 1, dim 3 scaled by 1.1;
//   LOOM_CHECK_PROG_NOLSE     leaves lse of the last request unwritten;
//   LOOM_CHECK_PROG_OVERRUN   also writes the o row just past the bound ones;
//   LOOM_CHECK_PROG_READTAIL  reads whole last pages (their NaN tails);
//   LOOM_CHECK_PROG_FAILTASK  the task returns an error code;
//   LOOM_CHECK_PROG_CLOBBER   overwrites an element of q_pe after using it.
//
//===----------------------------------------------------------------------===//
#include "kernels/common/Numerics.h"
#include "kernels/common/ProgramAbi.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace {

constexpr int64_t H = 2, Dc = 16, Dp = 8, P = 4, kMaxBatch = 8,
                  kMaxPages = 64;
constexpr float kSmScale = 0.3f;

enum Buf { QNope, QPe, Ckv, Kpe, Indptr, Indices, Lens, O, Lse };

int32_t runTask(int32_t, const LoomBinding *b, void *) {
#ifdef LOOM_CHECK_PROG_FAILTASK
  return 7;
#endif
  using loom::bf16;
  const int64_t B = b[QNope].dims[0];
  auto *qn = static_cast<const bf16 *>(b[QNope].data);
  auto *qp = static_cast<const bf16 *>(b[QPe].data);
  auto *ckv = static_cast<const bf16 *>(b[Ckv].data);
  auto *kpe = static_cast<const bf16 *>(b[Kpe].data);
  auto *indptr = static_cast<const int32_t *>(b[Indptr].data);
  auto *indices = static_cast<const int32_t *>(b[Indices].data);
  auto *lens = static_cast<const int32_t *>(b[Lens].data);
  auto *o = static_cast<bf16 *>(b[O].data);
  auto *lse = static_cast<float *>(b[Lse].data);
  for (int64_t r = 0; r < B; ++r) {
    int64_t len = lens[r];
#ifdef LOOM_CHECK_PROG_READTAIL
    len = (indptr[r + 1] - indptr[r]) * P;
#endif
    for (int64_t h = 0; h < H; ++h) {
      std::vector<float> s(static_cast<size_t>(len));
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t t = 0; t < len; ++t) {
        int64_t row = int64_t(indices[indptr[r] + t / P]) * P + t % P;
        float dot = 0;
        for (int64_t d = 0; d < Dc; ++d)
          dot += loom::toFloat(qn[(r * H + h) * Dc + d]) *
                 loom::toFloat(ckv[row * Dc + d]);
        for (int64_t d = 0; d < Dp; ++d)
          dot += loom::toFloat(qp[(r * H + h) * Dp + d]) *
                 loom::toFloat(kpe[row * Dp + d]);
        s[size_t(t)] = kSmScale * dot;
        m = std::fmax(m, s[size_t(t)]);
      }
      float sum = 0;
      std::vector<float> acc(Dc, 0.f);
      for (int64_t t = 0; t < len; ++t) {
        int64_t row = int64_t(indices[indptr[r] + t / P]) * P + t % P;
        float p = std::exp(s[size_t(t)] - m);
        sum += p;
        for (int64_t d = 0; d < Dc; ++d)
          acc[size_t(d)] += p * loom::toFloat(ckv[row * Dc + d]);
      }
      for (int64_t d = 0; d < Dc; ++d) {
        float v = len ? acc[size_t(d)] / sum : 0.f;
#ifdef LOOM_CHECK_PROG_WRONG
        if (r == 2 && h == 1 && d == 3)
          v *= 1.1f;
#endif
        o[(r * H + h) * Dc + d] = loom::toBf16(v);
      }
#ifdef LOOM_CHECK_PROG_NOLSE
      if (r == B - 1)
        continue;
#endif
      lse[r * H + h] = len ? (m + std::log(sum)) / 0.6931471805599453f
                           : -std::numeric_limits<float>::infinity();
    }
  }
#ifdef LOOM_CHECK_PROG_OVERRUN
  o[B * H * Dc] = loom::toBf16(1.0f);
#endif
#ifdef LOOM_CHECK_PROG_CLOBBER
  const_cast<bf16 *>(qp)[1] = loom::toBf16(0.0f);
#endif
  return 0;
}

const LoomBufferDesc kBuffers[] = {
    {"q_nope", LOOM_ROLE_INPUT, LOOM_ELEM_BF16, 3, {-1, H, Dc}, kMaxBatch},
    {"q_pe", LOOM_ROLE_INPUT, LOOM_ELEM_BF16, 3, {-1, H, Dp}, kMaxBatch},
    {"ckv_cache", LOOM_ROLE_CACHE, LOOM_ELEM_BF16, 3, {kMaxPages, P, Dc}, 0},
    {"kpe_cache", LOOM_ROLE_CACHE, LOOM_ELEM_BF16, 3, {kMaxPages, P, Dp}, 0},
    {"kv_indptr", LOOM_ROLE_META, LOOM_ELEM_I32, 1, {-1}, kMaxBatch + 1},
    {"kv_indices", LOOM_ROLE_META, LOOM_ELEM_I32, 1, {-1}, kMaxPages},
    {"kv_lens", LOOM_ROLE_META, LOOM_ELEM_I32, 1, {-1}, kMaxBatch},
    {"o", LOOM_ROLE_OUTPUT, LOOM_ELEM_BF16, 3, {-1, H, Dc}, kMaxBatch},
    {"lse", LOOM_ROLE_OUTPUT, LOOM_ELEM_F32, 2, {-1, H}, kMaxBatch},
};
const int32_t kWorkerBegin[] = {0, 1};
const int32_t kWorkerTasks[] = {0};
const int32_t kTaskWaitBegin[] = {0, 0};
const int32_t kTaskTriggerBegin[] = {0, 0};
const char *const kTaskNames[] = {"mla_decode#0[0]"};

LoomProgramDesc makeProgram() {
  LoomProgramDesc p = {};
  p.abi_version = LOOM_PROGRAM_ABI_VERSION;
  p.name = "check_mla";
  p.target = "host";
  p.mode = LOOM_SCHEDULE_STATIC;
  p.num_workers = 1;
  p.num_tasks = 1;
  p.num_events = 0;
  p.num_buffers = int32_t(sizeof kBuffers / sizeof kBuffers[0]);
  p.buffers = kBuffers;
  p.workspace_bytes = 0;
  p.worker_begin = kWorkerBegin;
  p.worker_tasks = kWorkerTasks;
  p.task_wait_begin = kTaskWaitBegin;
  p.wait_events = nullptr;
  p.task_trigger_begin = kTaskTriggerBegin;
  p.trigger_events = nullptr;
  p.event_needs = nullptr;
  p.task_names = kTaskNames;
  p.run_task = runTask;
  return p;
}

const LoomProgramDesc kProgram = makeProgram();

} // namespace

extern "C" __attribute__((visibility("default"))) const LoomProgramDesc *
loom_host_program(void) {
  return &kProgram;
}
