#!/usr/bin/env bash
# The GPU check in one command, from the repository root, within 9 minutes on a bare machine
# with an NVIDIA GPU (bench/README.md, "A GPU check"):
#
#   bash bench/gpu_check.sh
#
# 1. installs the wheels of .whl/ (islpy, pyopencl, ...) into /tmp/site, if the folder exists;
# 2. registers NVIDIA's OpenCL library as an ICD when only PoCL is, lists the OpenCL devices
#    and stops if polydyn's default device is not a GPU;
# 3. runs the OpenCL tests on it (tests.log);
# 4. runs the OpenCL sweep against numpy and torch-cuda into bench/results-gpu/ (sweep.log);
# 5. runs bench/gpu_probe.py (probe.log): matmul by recipe sizes (local buffers, vector
#    copies), conv2d in either loop order, matmul compiled for any size against fixed sizes,
#    the row reductions in 32- and 64-bit index builds;
# 6. renders bench/RESULTS.md (its GPU section: shares of torch-cuda and of the roofline);
# 7. with OUT set, leaves in $OUT: summary.txt, tests.log, sweep.log, probe.log, suite.md and
#    results-gpu.tar.gz (the run's files of bench/results-gpu/ and RESULTS.md).
#
# Each phase has a time limit and prints its time; a failed phase is reported and the next
# one runs. Settings (environment): PYTHON (default python3), OUT, GPU_CHECK_BUDGET_S (the
# whole run, default 540), GPU_CHECK_TESTS_S (default 110), GPU_CHECK_SWEEP_S (default 290),
# GPU_CHECK_PROBE_S (default 100; 0: no probe), GPU_CHECK_WORKERS (pytest-xdist workers,
# default half the cores, at most 8).
#
# Dry run without a GPU (PoCL's CPU device, the quick suite, everything under a temporary
# folder, bench/ untouched):
#
#   GPU_CHECK_ALLOW_CPU=1 PYTHON=.venv/bin/python bash bench/gpu_check.sh

set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
PYTHON=${PYTHON:-python3}
DRY=${GPU_CHECK_ALLOW_CPU:-0}
BUDGET=${GPU_CHECK_BUDGET_S:-540}
TESTS_S=${GPU_CHECK_TESTS_S:-110}
SWEEP_S=${GPU_CHECK_SWEEP_S:-290}
PROBE_S=${GPU_CHECK_PROBE_S:-100}
RESERVE_S=40  # kept for rendering and packing after the sweep and the probe
START=$SECONDS

WORK=$(mktemp -d /tmp/gpu-check.XXXXXX)  # logs, the compile cache, a dry run's results
if [ "$DRY" = 1 ]; then
  RESULTS=$WORK/results-gpu
  DEST=${OUT:-$WORK}
  SITE=$WORK/site
  RENDER_MD=$WORK/RESULTS.md
else
  RESULTS=bench/results-gpu
  DEST=${OUT:-bench/results-gpu}
  SITE=/tmp/site
  RENDER_MD=bench/RESULTS.md
fi
mkdir -p "$DEST" "$RESULTS"
export POLYDYN_CACHE_DIR=${POLYDYN_CACHE_DIR:-$WORK/cache}
SUMMARY=$WORK/summary.txt
: >"$SUMMARY"
STAMP=$WORK/stamp
touch "$STAMP"

say() { echo "$*" | tee -a "$SUMMARY"; }
PHASE_START=$SECONDS
phase() {
  PHASE_START=$SECONDS
  echo
  echo "== $1 (at $((SECONDS - START)) s)"
}
# end_phase NAME STATUS: one summary line with the phase's time
end_phase() { say "$1: $2 ($((SECONDS - PHASE_START)) s)"; }
left() { echo $((BUDGET - (SECONDS - START))); }
# cap S: S, or less where the budget (less the reserve) has less left
cap() {
  local room=$(($(left) - RESERVE_S))
  if [ "$room" -lt "$1" ]; then echo "$room"; else echo "$1"; fi
}

say "gpu_check: $(git rev-parse --short HEAD 2>/dev/null || echo '?') mode=$([ "$DRY" = 1 ] \
  && echo 'dry (CPU allowed, quick suite)' || echo gpu) python=$PYTHON out=$DEST"

# --- 1. wheels -----------------------------------------------------------------------------
phase "wheels"
if ls .whl/*.whl >/dev/null 2>&1; then
  if timeout 120 "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
      --upgrade --target "$SITE" .whl/*.whl; then
    export PYTHONPATH=$SITE
    end_phase wheels "installed $(ls .whl/*.whl | wc -l) into $SITE"
  else
    end_phase wheels "FAILED to install .whl/*.whl (see above)"
  fi
else
  end_phase wheels "no .whl/ folder: the packages must be importable already"
fi
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$ROOT
if ! "$PYTHON" -c "import islpy, pyopencl, cgen, pycparser, polydyn" 2>"$WORK/import.err"; then
  say "imports: FAILED: $(tail -1 "$WORK/import.err")"
fi

# --- 2. NVIDIA's OpenCL ICD and the device ---------------------------------------------------
phase "OpenCL device"
lib=$(ldconfig -p 2>/dev/null | awk '/libnvidia-opencl\.so/ {print $NF; exit}')
if [ -z "$lib" ]; then
  lib=$(timeout 60 find / -name 'libnvidia-opencl.so*' -not -path '/proc/*' 2>/dev/null \
        | head -1)
fi
VENDORS=/etc/OpenCL/vendors
if [ -z "$lib" ]; then
  say "icd: no libnvidia-opencl found: nothing registered"
elif [ -f "$VENDORS/nvidia.icd" ] && ! ls "$VENDORS"/*pocl* >/dev/null 2>&1; then
  say "icd: $VENDORS/nvidia.icd already there, PoCL not registered"
elif { mkdir -p "$VENDORS" && echo "$lib" >"$VENDORS/nvidia.icd"; } 2>/dev/null; then
  for icd in "$VENDORS"/*pocl*.icd; do  # aside, so that NVIDIA's platform is the only one
    [ -e "$icd" ] && mv "$icd" "/etc/OpenCL/$(basename "$icd").aside"
  done
  say "icd: $VENDORS/nvidia.icd -> $lib (PoCL moved aside: $(ls /etc/OpenCL/*.aside 2>/dev/null \
    | tr '\n' ' '))"
else  # not root: a vendors folder of our own
  mkdir -p "$WORK/vendors" && echo "$lib" >"$WORK/vendors/nvidia.icd"
  export OCL_ICD_VENDORS=$WORK/vendors
  say "icd: $VENDORS not writable: OCL_ICD_VENDORS=$OCL_ICD_VENDORS with nvidia.icd -> $lib"
fi
[ "$DRY" = 1 ] || unset PYOPENCL_CTX  # polydyn's default device: the first GPU
timeout 60 "$PYTHON" - "$DRY" >"$WORK/devices.txt" 2>&1 <<'EOF'
import sys

import pyopencl as cl

try:
    platforms = cl.get_platforms()
except cl.Error as exc:
    print(f"no OpenCL platform: {exc}")
    sys.exit(3)
for platform in platforms:
    print(f"platform: {platform.name.strip()} ({platform.version.strip()})")
    try:
        devices = platform.get_devices()
    except cl.Error:
        devices = []
    for d in devices:
        kind = cl.device_type.to_string(d.type)
        print(f"  device: {d.name.strip()} [{kind}], driver {d.driver_version.strip()}, "
              f"{d.max_compute_units} compute units, {d.global_mem_size / 2**30:.0f} GiB")
from polydyn.runtime.opencl import resolve_device

dc = resolve_device(None)
gpu = bool(dc.device.type & cl.device_type.GPU)
print(f"polydyn's default device: {dc.describe()} ({'a GPU' if gpu else 'NOT a GPU'})")
sys.exit(0 if gpu or sys.argv[1] == "1" else 3)
EOF
device_rc=$?
cat "$WORK/devices.txt" | tee -a "$SUMMARY"
timeout 60 "$PYTHON" -c "
import torch
ok = torch.cuda.is_available()
print(torch.__version__, 'CUDA:', torch.cuda.get_device_name(0) if ok else 'none')
" 2>&1 | tail -1 | sed 's/^/torch: /' | tee -a "$SUMMARY"
if [ "$device_rc" != 0 ]; then
  end_phase "OpenCL device" "FAILED: no GPU is polydyn's default OpenCL device (rc $device_rc);\
 the tests and the sweep are not run"
else
  end_phase "OpenCL device" ok
fi

# pytest_counts LOG RC: the run's closing line, or its per-test lines counted if it was cut
pytest_counts() {
  local closing
  closing=$(grep -E '^=+ .*[0-9]+ (passed|failed|error|errors|skipped|deselected).* in [0-9.]+s' \
            "$1" | tail -1 | sed -E 's/^=+ //; s/ =+$//')
  if [ -n "$closing" ]; then
    echo "$closing"
  else
    echo "cut short (rc $2), counted: $(grep -oE ' (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)( |$)' \
      "$1" | sort | uniq -c | awk '{printf "%s %s, ", $1, tolower($2)}' | sed 's/, $//')"
  fi
}

# --- 3. the OpenCL tests on the GPU ----------------------------------------------------------
TESTS_LOG=$WORK/tests.log
: >"$TESTS_LOG"
if [ "$device_rc" = 0 ]; then
  phase "OpenCL tests"
  cores=$(nproc 2>/dev/null || echo 2)
  workers=${GPU_CHECK_WORKERS:-$((cores / 2 > 8 ? 8 : cores / 2))}
  xdist=()
  if [ "$workers" -gt 1 ] && "$PYTHON" -c "import xdist" 2>/dev/null; then
    xdist=(-n "$workers")
  fi
  say "tests: $([ ${#xdist[@]} = 0 ] && echo 'one process' || echo "$workers pytest-xdist workers")"
  tests_end=$((SECONDS + $(cap "$TESTS_S")))
  # the tests marked opencl, then the fuzzer's OpenCL regressions (unmarked: their own run)
  fuzz=()
  for f in $(grep -lE "^TARGET = .opencl" tests/fuzz/regressions/*.py 2>/dev/null); do
    fuzz+=("tests/test_fuzz.py::test_regression[$(basename "$f" .py)]")
  done
  runs=("marked" "fuzz")
  for run in "${runs[@]}"; do
    if [ "$run" = marked ]; then
      args=(tests/test_opencl_cells.py tests/test_opencl_lanes.py tests/test_ragged_opencl.py
            tests/test_opencl_regtiles.py tests/test_opencl_host.py tests/test_opencl_index32.py
            tests/test_opencl.py
            tests/test_opencl_safety.py tests/test_c_input.py tests/test_conformance.py
            tests/test_bench.py -m opencl)
      limit=$((tests_end - SECONDS - 25))  # 25 s kept for the regressions
    else
      args=("${fuzz[@]}")
      limit=$((tests_end - SECONDS))
    fi
    if [ "$limit" -lt 10 ] || [ "${#args[@]}" = 0 ]; then
      say "tests ($run): not run (no time left or nothing to run)"
      continue
    fi
    echo "--- pytest ($run), at most $limit s" >>"$TESTS_LOG"
    timeout -k 10 "$limit" "$PYTHON" -m pytest -v -p no:cacheprovider "${xdist[@]}" \
      "${args[@]}" >"$WORK/tests-$run.log" 2>&1
    rc=$?
    cat "$WORK/tests-$run.log" >>"$TESTS_LOG"
    say "tests ($run): $(pytest_counts "$WORK/tests-$run.log" "$rc")$([ "$rc" = 124 ] \
      && echo " -- TIME LIMIT ($limit s) reached")"
  done
  tail -3 "$TESTS_LOG"
  end_phase "OpenCL tests" "done (tests.log)"
fi

# --- 4. the sweep against torch-cuda ---------------------------------------------------------
SWEEP_LOG=$WORK/sweep.log
: >"$SWEEP_LOG"
# run_sweep LIMIT: bench/run_all.py under LIMIT seconds, no sweep started in its last 90
run_sweep() {
  local deadline=$(($1 - 90 > 30 ? $1 - 90 : 30)) rc late bad
  local sweep=(bench/run_all.py --target opencl --baseline numpy,torch-cuda --no-costs
               --quiet 0 --no-progress --out "$RESULTS" --deadline "$deadline")
  if [ "$DRY" = 1 ]; then
    sweep+=(--quick)
  else  # every sweep but matmul-tiles, as the GPU run of RESULTS.md
    sweep+=(--budget 0.25 --only matmul-square matmul-skinny matmul-gemv batched_matmul
            bias_relu softmax-rows softmax-large softmax-sweep layernorm conv2d maxpool
            transpose jacobi2d)
  fi
  echo "$PYTHON ${sweep[*]}   (at most $1 s)" >"$SWEEP_LOG"
  timeout -k 10 "$1" "$PYTHON" "${sweep[@]}" >>"$SWEEP_LOG" 2>&1
  rc=$?
  tail -2 "$SWEEP_LOG"
  if [ "$rc" = 0 ]; then
    late=$(grep -o "Not run (past the run's deadline): .*" "$RESULTS/suite.md" 2>/dev/null)
    bad=$(grep -cE '^- .* at .*: (wrong|error):' "$RESULTS/suite.md" 2>/dev/null)
    end_phase sweep "ok, $RESULTS/suite.md, ${bad:-0} wrong or failed points${late:+; $late}"
  elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    end_phase sweep "TIME LIMIT ($1 s) reached: no suite written (sweep.log)"
  else
    end_phase sweep "FAILED (rc $rc, sweep.log)"
  fi
}
if [ "$device_rc" = 0 ]; then
  phase "sweep"
  limit=$(cap "$SWEEP_S")
  room=$(($(left) - RESERVE_S - PROBE_S))  # the probe's time kept too
  [ "$room" -lt "$limit" ] && limit=$room
  if [ "$limit" -lt 60 ]; then
    end_phase sweep "not run: $limit s left"
  else
    run_sweep "$limit"
  fi
fi

# --- 5. the probe -----------------------------------------------------------------------------
PROBE_LOG=$WORK/probe.log
: >"$PROBE_LOG"
if [ "$device_rc" = 0 ] && [ "$PROBE_S" -gt 0 ]; then
  phase "probe"
  limit=$(cap "$PROBE_S")
  if [ "$limit" -lt 20 ]; then
    end_phase probe "not run: $limit s left"
  else
    probe_env=()
    [ "$DRY" = 1 ] && probe_env=(PROBE_SIZES=67 PROBE_ROW_SCALE=16)
    env "${probe_env[@]}" PROBE_REV="$(git rev-parse --short HEAD 2>/dev/null)" \
      timeout -k 5 "$limit" "$PYTHON" bench/gpu_probe.py >"$PROBE_LOG" 2>&1
    rc=$?
    grep -E '^(matmul|conv2d|gemv|ragged|softmax|layernorm|ptxas info)' "$PROBE_LOG" |
      tee -a "$SUMMARY"
    end_phase probe "$([ "$rc" = 0 ] && echo ok || echo "rc $rc") (probe.log)"
  fi
fi

# --- 6. RESULTS.md ---------------------------------------------------------------------------
phase "render"
if timeout 30 "$PYTHON" bench/run_all.py --render-only --results-md "$RENDER_MD" \
    >"$WORK/render.log" 2>&1; then
  end_phase render "ok, $RENDER_MD"
else
  end_phase render "FAILED: $(tail -1 "$WORK/render.log")"
fi

# --- 7. what comes back ----------------------------------------------------------------------
phase "pack"
cp "$TESTS_LOG" "$SWEEP_LOG" "$PROBE_LOG" "$DEST/" 2>/dev/null
if [ -n "${OUT:-}" ] || [ "$DRY" = 1 ]; then
  [ -f "$RESULTS/suite.md" ] && [ "$RESULTS/suite.md" -nt "$STAMP" ] && \
    cp "$RESULTS/suite.md" "$DEST/suite.md"
  # the files this run wrote (an earlier run's plots stay out), and the rendered RESULTS.md
  base=$(dirname "$RESULTS")
  files=$(cd "$base" && find results-gpu -maxdepth 1 -type f -newer "$STAMP" | sort)
  if [ -n "$files" ]; then
    cp "$RENDER_MD" "$base/results-gpu/RESULTS.md" 2>/dev/null && \
      files="$files results-gpu/RESULTS.md"
    # shellcheck disable=SC2086  # the names have no spaces
    tar -czf "$DEST/results-gpu.tar.gz" -C "$base" $files && \
      say "pack: $DEST/results-gpu.tar.gz: $(echo $files | wc -w) files, \
$(du -k "$DEST/results-gpu.tar.gz" | cut -f1) KiB"
    [ "$DRY" = 1 ] || rm -f "$base/results-gpu/RESULTS.md"
  else
    say "pack: the sweep wrote no files"
  fi
fi
say "total: $((SECONDS - START)) s"
[ "$SUMMARY" -ef "$DEST/summary.txt" ] || cp "$SUMMARY" "$DEST/summary.txt"
echo
echo "== summary ($DEST/summary.txt)"
cat "$SUMMARY"
[ "$device_rc" = 0 ]
