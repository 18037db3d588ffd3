#!/usr/bin/env bash
# The GPU evidence in one command, for a machine with an NVIDIA GPU, LibTorch (the torch wheel)
# and nvcc, and nothing else: builds the trainer-only targets with that machine's torch, checks
# every CUDA attention backend against the fp64 reference (and runs the GPU tests when
# GoogleTest is there), times every backend forward and forward+backward at T in {4k, 16k, 32k} x
# w in {128, 512, 2048} (bf16, head dim 128), and measures the trainer's tokens/s and MFU on a
# ~100M-parameter SSSF hybrid (bench/gpu/hybrid-100m.json) with each CUDA backend. When
# compute-sanitizer is there, it also runs the custom kernel's correctness checks under its
# synccheck, racecheck and memcheck tools (see "compute-sanitizer" below).
#
#   bench/gpu/run.sh [OUT_DIR]          ARCH=90a (default; 80 for A100) QUICK=1 (smaller grid)
#                                       SANITIZE=0 (skip the sanitizer) SANITIZER=/path/to/it
#                                       SANITIZER_TIMEOUT=1800 (seconds per sanitizer run)
#
# Prints a short table; OUT_DIR (default bench/gpu/results) gets env.txt, check.txt,
# sanitizer-*.txt, attention.txt, attention.jsonl, train-*.jsonl and summary.txt. Exits non-zero
# when the build, a correctness check or a sanitizer check fails.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-$root/bench/gpu/results}
build=${BUILD_DIR:-$root/build-gpu}
arch=${ARCH:-90a}
mkdir -p "$out"
: > "$out/summary.txt"
torch_dir=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "share/cmake/Torch"))')
generator=$(command -v ninja >/dev/null && echo "-G Ninja" || echo "")
{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  nvcc --version | tail -1
} > "$out/env.txt"
cat "$out/env.txt"

# shellcheck disable=SC2086
cmake -S "$root" -B "$build" $generator -DCMAKE_BUILD_TYPE=Release -DONSET_TRAINER_ONLY=ON \
  -DONSET_CUDA_ARCHITECTURES="$arch" -DTorch_DIR="$torch_dir" > "$out/cmake.txt"
targets="onset-train onset-attention-bench"
grep -q "GoogleTest not found" "$out/cmake.txt" || targets="$targets kernel_tests gpu_tests"
# shellcheck disable=SC2086
cmake --build "$build" -j "$(nproc)" --target $targets > "$out/build.txt" 2>&1 ||
  { tail -40 "$out/build.txt"; exit 1; }
grep -q "custom CUDA kernel linked" "$out/cmake.txt" || { echo "the custom kernel was not built"; exit 1; }

status=0
"$build/bin/onset-attention-bench" --check --device cuda --backends custom,flash,sdpa-band,blocked \
  > "$out/check.txt" 2>&1 || status=1
tail -1 "$out/check.txt"
if [ -x "$build/bin/gpu_tests" ]; then
  "$build/bin/kernel_tests" > "$out/kernel_tests.txt" 2>&1 || status=1
  "$build/bin/gpu_tests" > "$out/gpu_tests.txt" 2>&1 || status=1
  tail -3 "$out/gpu_tests.txt"
fi

# compute-sanitizer on the custom kernel's own kernels (--kernel-name: LibTorch's, the fp64
# reference's included, run uninstrumented and at full speed). synccheck (barriers and
# warp-level synchronization) on every check case and on the custom kernel's GPU tests;
# racecheck (shared-memory hazards) and memcheck (out-of-bounds and misaligned accesses, with
# LibTorch's caching allocator off so each tensor is its own allocation) on the cases with
# T <= 130, where they are cheap. Each run writes sanitizer-TOOL-WHAT.txt; a reported error or
# hazard, a failed check, or a run that does not finish fails the script.
sanitizer=${SANITIZER:-}
if [ -z "$sanitizer" ]; then
  for candidate in "$(command -v compute-sanitizer || true)" \
    "$(dirname "$(command -v nvcc)")/compute-sanitizer" "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then
      sanitizer=$candidate
      break
    fi
  done
fi

# sanitize TOOL WHAT COMMAND...: COMMAND under compute-sanitizer's TOOL, output in
# $out/sanitizer-TOOL-WHAT.txt, one verdict line in summary.txt.
sanitize() {
  local tool=$1 what=$2 log="$out/sanitizer-$1-$2.txt" rc=0 verdict=ok
  shift 2
  (
    [ "$tool" != memcheck ] || export PYTORCH_NO_CUDA_MEMORY_CACHING=1
    exec timeout "${SANITIZER_TIMEOUT:-1800}" "$sanitizer" --tool "$tool" \
      --kernel-name kns=5onset7kernels --error-exitcode 86 "$@"
  ) > "$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    verdict="FAILED (exit $rc)"
  elif grep -Eq "ERROR SUMMARY: [1-9]|[1-9][0-9]* hazards? displayed" "$log"; then
    verdict="FAILED (errors reported)"
  elif ! grep -q "SUMMARY" "$log"; then
    verdict="FAILED (no summary)"
  fi
  [ "$verdict" = ok ] || status=1
  echo "compute-sanitizer $tool ($what): $verdict; $(grep -m1 -o "[A-Z]* SUMMARY.*" "$log" || true)" |
    tee -a "$out/summary.txt"
}

if [ "${SANITIZE:-1}" = 0 ]; then
  echo "compute-sanitizer: skipped (SANITIZE=0)" | tee -a "$out/summary.txt"
elif [ -z "$sanitizer" ]; then
  echo "compute-sanitizer: not found (set SANITIZER=path): sanitizer checks not run" |
    tee -a "$out/summary.txt"
else
  "$sanitizer" --version | tail -1 >> "$out/env.txt"
  bench=("$build/bin/onset-attention-bench" --check --device cuda --backends custom)
  sync_max=0
  [ "${QUICK:-0}" = 1 ] && sync_max=511
  sanitize synccheck check "${bench[@]}" --max-seq "$sync_max"
  if [ -x "$build/bin/gpu_tests" ]; then
    sanitize synccheck gpu-tests "$build/bin/gpu_tests" --gtest_filter='*custom*:*SwaKernel*'
  fi
  sanitize racecheck check "${bench[@]}" --max-seq 130
  sanitize memcheck check "${bench[@]}" --max-seq 130
fi

seqs=4096,16384,32768; windows=128,512,2048
[ "${QUICK:-0}" = 1 ] && { seqs=4096,16384; windows=512; }
"$build/bin/onset-attention-bench" --device cuda --dtype bf16 --seq "$seqs" --windows "$windows" \
  --heads 16 --kv-heads 16 --head-dim 128 --backends custom,flash,sdpa-band,blocked \
  --out "$out/attention.jsonl" | tee "$out/attention.txt"

# The L and D mixers' chunkwise ATen forms at the same shapes: do they need a kernel?
"$build/bin/onset-attention-bench" --linear --device cuda --dtype bf16 --seq "$seqs" \
  --heads 16 --head-dim 128 | tee "$out/linear.txt"

# NCCL data parallel at world size 1 (and 2 when the machine has two GPUs): a short run each.
gpus=$(nvidia-smi -L | wc -l)
cat > "$out/dp-cell.json" <<JSON
{"model": {"layers": 4, "d_model": 256, "heads": 4, "seq_len": 512, "arch": "swa", "window": 64},
 "train": {"tokens": 1048576, "batch_tokens": 65536, "micro_batch": 16, "precision": "bf16"},
 "eval": {"every_tokens": 1048576, "niah_lengths": [512], "niah_samples": 2}}
JSON
for n in 1 2; do
  [ "$n" -gt "$gpus" ] && break
  if [ "$n" = 1 ]; then
    # World size 1 as torchrun would start it; the trainer forms no process group for one rank
    # (dist_env.h), so this checks the launch path, and NCCL itself needs the 2-GPU run.
    RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29511 \
      "$build/bin/onset-train" --config "$out/dp-cell.json" --device cuda \
      --checkpoint-dir "$out/ckpt-dp" > "$out/dp-$n.jsonl" 2> "$out/dp-$n.err" && r=ok || r=FAILED
  else
    "$build/bin/onset-train" --config "$out/dp-cell.json" --device cuda --nproc "$n" \
      --checkpoint-dir "$out/ckpt-dp" > "$out/dp-$n.jsonl" 2> "$out/dp-$n.err" && r=ok || r=FAILED
  fi
  rm -rf "$out/ckpt-dp"
  echo "data parallel, world size $n: $r" | tee -a "$out/summary.txt"
  [ "$r" = ok ] || status=1
done

# The trainer on the ~100M hybrid: the last reported throughput and MFU per backend.
for backend in flash custom; do
  rm -rf "$out/ckpt-$backend"
  timeout "${TRAIN_TIMEOUT:-300}" "$build/bin/onset-train" --config "$root/bench/gpu/hybrid-100m.json" \
    --device cuda --attention-backend "$backend" --checkpoint-dir "$out/ckpt-$backend" \
    > "$out/train-$backend.jsonl" 2> "$out/train-$backend.err" || echo "trainer ($backend) exited $?"
  rm -rf "$out/ckpt-$backend"
  python3 - "$out/train-$backend.jsonl" "$backend" <<'PY' | tee -a "$out/summary.txt"
import json, sys
tps = mfu = None; params = None
for line in open(sys.argv[1]):
    try: e = json.loads(line)
    except ValueError: continue
    m = e.get("metrics", {})
    if "train/tokens_per_second" in m: tps = m["train/tokens_per_second"]
    if "train/mfu" in m: mfu = m["train/mfu"]
print(f"trainer {sys.argv[2]:7s} tokens/s {tps}  MFU {mfu}")
PY
done
exit $status
