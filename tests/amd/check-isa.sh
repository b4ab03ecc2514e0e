#!/usr/bin/env bash
#===- check-isa.sh - Compile the gfx950 kernels and inspect the code object -===#
#
# Compiles tests/amd/Gfx950Kernels.hip for gfx950 with clang++-22 alone (no
# ROCm: -nogpuinc -nogpulib, Loom's own kernels/amd/HipDevice.h), then reads
# the code object metadata (llvm-readelf --notes) and the disassembly
# (llvm-objdump -d --mcpu=gfx950) and checks:
#
#   every kernel   no scratch (.private_segment_fixed_size 0, no scratch_*
#                  instructions, no dynamic stack), no VGPR spills, arch
#                  VGPRs <= 256 and AGPRs <= 256 (512 per wave at occupancy
#                  1), static LDS <= 4096 B (the emitter's reserve next to
#                  the dynamic LDS; 160 KB in all), wave64, 256 threads per
#                  workgroup; no SGPR spills in the interpreter and in every
#                  single-body kernel;
#   programs       the loom_program_* kernels inline a whole family of
#                  bodies into the persistent loop, as generated code does.
#                  With the plain -O3 line the machine LICM hoists every
#                  body's constants out of the task loop and SGPRs spill to
#                  VGPR lanes (no scratch): reported as WARN. They are
#                  compiled a second time with -mllvm -disable-machine-licm
#                  (as loomc compiles generated programs), where
#                  they must have no SGPR spills and no scratch;
#   MFMA           v_mfma_f32_16x16x4_f32 in the KDA kernels,
#                  v_mfma_f32_16x16x32_bf16 in the MLA split and linear
#                  kernels, v_mfma_f32_16x16x32_f16 in the f16 MLA split;
#   memory model   in the interpreter and every program kernel: agent-scope
#                  release = buffer_wbl2 sc1 then s_waitcnt vmcnt(0) before
#                  the counter add; acquire = buffer_inv sc1; no system-wide
#                  write-back / invalidate (sc0 sc1); counter RMWs are
#                  global_atomic_add_x2 at agent scope (no sc1 bit; gfx950
#                  prints scope as sc0/sc1, sc1 on an atomic = system);
#                  polls are global_load_dwordx2 ... sc1; the host-mapped
#                  status / abort flag use system scope (sc0 sc1); s_sleep
#                  backoff and s_memtime; no flat_* atomics.
#
# Prints one line per check and "N passed, M failed"; exits 1 on failure.
#
# Usage: tests/amd/check-isa.sh [repo-root]
#   CLANGXX, OBJDUMP, READELF   tools (default clang++-22, llvm-objdump-22,
#                               llvm-readelf-22)
#   LOOM_ISA_OUT                keep the code object, disassembly and
#                               metadata in this directory
#
#===----------------------------------------------------------------------===#
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="${1:-$(cd "$here/../.." && pwd)}"
CLANGXX="${CLANGXX:-clang++-22}"
OBJDUMP="${OBJDUMP:-llvm-objdump-22}"
READELF="${READELF:-llvm-readelf-22}"

for tool in "$CLANGXX" "$OBJDUMP" "$READELF"; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "check-isa: $tool not found" >&2
    exit 2
  fi
done

if [ -n "${LOOM_ISA_OUT:-}" ]; then
  out="$LOOM_ISA_OUT"
  mkdir -p "$out"
else
  out="$(mktemp -d)"
  trap 'rm -rf "$out"' EXIT
fi

src="$root/tests/amd/Gfx950Kernels.hip"
obj="$out/gfx950-kernels.hsaco"
echo "check-isa: compiling $src"
if ! "$CLANGXX" -x hip --offload-arch=gfx950 -nogpuinc -nogpulib \
    --cuda-device-only --no-gpu-bundle-output -O3 -std=c++17 -I"$root" \
    "$src" -o "$obj" 2>"$out/compile.log"; then
  cat "$out/compile.log" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
if [ -s "$out/compile.log" ]; then
  echo "check-isa: compiler diagnostics:"
  cat "$out/compile.log"
fi
"$OBJDUMP" -d --mcpu=gfx950 "$obj" >"$out/gfx950-kernels.s"
"$READELF" --notes "$obj" >"$out/notes.txt"

# One tab-separated line per kernel from the AMDHSA metadata: a kernel entry
# starts with "  - ." and its keys sit at four spaces (the .args entries are
# deeper).
awk '
  function flush() {
    if (name != "")
      printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name,
             v["vgpr_count"], v["agpr_count"], v["sgpr_count"],
             v["vgpr_spill_count"], v["sgpr_spill_count"],
             v["private_segment_fixed_size"], v["group_segment_fixed_size"],
             v["wavefront_size"], v["max_flat_workgroup_size"],
             v["uses_dynamic_stack"]
    name = ""; delete v
  }
  /^  - \./ { flush(); line = $0; sub(/^  - /, "    ", line); $0 = line }
  /^    \.[a-z_]+:/ {
    key = $1; sub(/^\./, "", key); sub(/:$/, "", key)
    val = $2
    if (key == "name") name = val; else v[key] = val
  }
  END { flush() }
' "$out/notes.txt" >"$out/kernels.tsv"

# The disassembly of one kernel: from its label to the next label.
kernel_asm() {
  awk -v want="<$1>:" '/^[0-9a-f]+ <[^>]*>:$/ { on = ($2 == want) } on' \
    "$out/gfx950-kernels.s"
}

pass=0
fail=0
check() { # check <description> <command...>
  local what="$1"
  shift
  if "$@"; then
    pass=$((pass + 1))
    echo "PASS  $what"
  else
    fail=$((fail + 1))
    echo "FAIL  $what"
  fi
}
has() { grep -Eq -- "$2" <<<"$1"; }
lacks() { ! grep -Eq -- "$2" <<<"$1"; }
le() { [ "${1:-x}" -le "$2" ] 2>/dev/null; }
eq() { [ "${1:-x}" = "$2" ]; }

echo
printf '%-30s %5s %5s %5s %6s %6s %7s %6s\n' kernel vgpr agpr sgpr vspill sspill scratch lds
while IFS=$'\t' read -r name vgpr agpr sgpr vsp ssp priv lds wave wg dyn; do
  printf '%-30s %5s %5s %5s %6s %6s %7s %6s\n' "$name" "$vgpr" "$agpr" "$sgpr" \
    "$vsp" "$ssp" "$priv" "$lds"
done <"$out/kernels.tsv"
echo

expected=(loom_test_interpreter
  loom_body_rmsnorm loom_body_linear_tile loom_body_linear_partial
  loom_body_linear_reduce loom_body_rope loom_body_kv_append
  loom_body_gqa_split loom_body_gqa_merge loom_body_silu_mul loom_body_add
  loom_body_embedding loom_body_argmax loom_body_mla_split
  loom_body_mla_split_f16 loom_body_mla_merge loom_body_kda_intra
  loom_body_kda_scan loom_program_decoder loom_program_mla loom_program_kda)
for k in "${expected[@]}"; do
  check "$k is in the code object" grep -q "^$k	" "$out/kernels.tsv"
done

while IFS=$'\t' read -r name vgpr agpr sgpr vsp ssp priv lds wave wg dyn; do
  asm="$(kernel_asm "$name")"
  arch=$((vgpr - agpr))
  check "$name: no scratch (private_segment_fixed_size $priv)" eq "$priv" 0
  check "$name: no dynamic stack" eq "$dyn" false
  check "$name: no scratch instructions" lacks "$asm" 'scratch_(load|store)|buffer_(load|store)_dword[x0-9]* [^,]+, off, s\[0:3\]'
  check "$name: no VGPR spills ($vsp)" eq "$vsp" 0
  case "$name" in
  loom_program_*)
    if [ "$ssp" != 0 ]; then
      echo "WARN  $name: $ssp SGPR spills to VGPR lanes with plain -O3 (no scratch; see the -disable-machine-licm build below)"
    fi
    ;;
  *) check "$name: no SGPR spills ($ssp)" eq "$ssp" 0 ;;
  esac
  check "$name: arch VGPRs $arch <= 256" le "$arch" 256
  check "$name: AGPRs $agpr <= 256" le "$agpr" 256
  check "$name: VGPRs incl. AGPRs $vgpr <= 512" le "$vgpr" 512
  check "$name: static LDS $lds <= 4096 (+ dynamic <= 163840)" le "$lds" 4096
  check "$name: wave64" eq "$wave" 64
  check "$name: 256 threads per workgroup" eq "$wg" 256
done <"$out/kernels.tsv"

mfma_f32='v_mfma_f32_16x16x4_f32 '
mfma_bf16='v_mfma_f32_16x16x32_bf16 '
mfma_f16='v_mfma_f32_16x16x32_f16 '
for k in loom_body_kda_intra loom_body_kda_scan loom_program_kda; do
  check "$k: MFMA v_mfma_f32_16x16x4_f32" has "$(kernel_asm "$k")" "$mfma_f32"
done
for k in loom_body_mla_split loom_program_mla loom_body_linear_tile \
  loom_body_linear_partial loom_program_decoder; do
  check "$k: MFMA v_mfma_f32_16x16x32_bf16" has "$(kernel_asm "$k")" "$mfma_bf16"
done
check "loom_body_mla_split_f16: MFMA v_mfma_f32_16x16x32_f16" \
  has "$(kernel_asm loom_body_mla_split_f16)" "$mfma_f16"

# Every buffer_wbl2 is followed by s_waitcnt vmcnt(0) before the next
# global atomic (the write-back has finished before the counter moves).
wbl2_waited() {
  awk '
    /buffer_wbl2/ { open = 1; next }
    open && /s_waitcnt vmcnt\(0\)/ { open = 0; next }
    open && /global_atomic|flat_atomic/ { bad = 1 }
    END { exit bad }
  ' <<<"$1"
}

for k in loom_test_interpreter loom_program_decoder loom_program_mla \
  loom_program_kda; do
  asm="$(kernel_asm "$k")"
  check "$k: release = buffer_wbl2 sc1" has "$asm" 'buffer_wbl2 sc1( |$)'
  check "$k: s_waitcnt vmcnt(0) after buffer_wbl2, before the add" wbl2_waited "$asm"
  check "$k: no system-wide write-back (buffer_wbl2 sc0 sc1)" lacks "$asm" 'buffer_wbl2 sc0 sc1'
  check "$k: acquire = buffer_inv sc1" has "$asm" 'buffer_inv sc1( |$)'
  check "$k: no system-wide invalidate (buffer_inv sc0 sc1)" lacks "$asm" 'buffer_inv sc0 sc1'
  check "$k: counter add = global_atomic_add_x2" has "$asm" 'global_atomic_add_x2 '
  check "$k: atomics at agent scope (no sc1 on any atomic)" lacks "$asm" 'global_atomic[a-z_0-9]* .* sc1'
  check "$k: no flat atomics" lacks "$asm" 'flat_atomic'
  check "$k: poll = global_load_dwordx2 ... sc1 (agent)" has "$asm" 'global_load_dwordx2 .* sc1( |$)'
  check "$k: status stores at system scope (sc0 sc1)" has "$asm" 'global_store_dword(x2)? .* sc0 sc1'
  check "$k: abort flag read at system scope (sc0 sc1)" has "$asm" 'global_load_dword .* sc0 sc1'
  check "$k: s_sleep backoff" has "$asm" 's_sleep '
  check "$k: s_memtime clock" has "$asm" 's_memtime '
done
check "loom_test_interpreter: dynamic ticket = returning global_atomic_add_x2 (sc0)" \
  has "$(kernel_asm loom_test_interpreter)" 'global_atomic_add_x2 v\[[0-9:]+\], .* sc0'

# The program kernels again, with the machine LICM off.
obj2="$out/gfx950-kernels-nolicm.hsaco"
if "$CLANGXX" -x hip --offload-arch=gfx950 -nogpuinc -nogpulib \
    --cuda-device-only --no-gpu-bundle-output -O3 -std=c++17 -I"$root" \
    -mllvm -disable-machine-licm "$src" -o "$obj2" 2>>"$out/compile.log"; then
  "$READELF" --notes "$obj2" >"$out/notes-nolicm.txt"
  for k in loom_program_decoder loom_program_mla loom_program_kda; do
    entry="$(awk -v k="$k" '
      /^  - \./ { if (found) exit; buf = "" }
      { buf = buf "\n" $0 }
      $1 == ".name:" && $2 == k { found = 1 }
      END { if (found) print buf }' "$out/notes-nolicm.txt")"
    ssp="$(awk '$1 == ".sgpr_spill_count:" { print $2 }' <<<"$entry")"
    vsp="$(awk '$1 == ".vgpr_spill_count:" { print $2 }' <<<"$entry")"
    priv="$(awk '$1 == ".private_segment_fixed_size:" { print $2 }' <<<"$entry")"
    check "$k (-disable-machine-licm): no SGPR spills (${ssp:-?})" eq "${ssp:-x}" 0
    check "$k (-disable-machine-licm): no VGPR spills, no scratch" \
      eq "${vsp:-x}/${priv:-x}" 0/0
  done
else
  check "program kernels compile with -mllvm -disable-machine-licm" false
fi

echo
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
