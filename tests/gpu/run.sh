#!/usr/bin/env bash
# Everything GPU-related on a single-GPU machine, in one go:
#   1. checks for a GPU (nvidia-smi), the CUDA toolkit and an MPI;
#   2. builds the CUDA + NCCL configuration for this GPU only (CMAKE_CUDA_ARCHITECTURES=native)
#      into build-gpu/ (tests and benchmarks, no examples) - or, with PLM_GPU_PREBUILT=1, takes
#      the programs tests/gpu/bundle.sh built elsewhere (gpu-deps/prebuilt), for a GPU
#      machine without compilers' dependencies (MPI, OpenBLAS);
#   3. runs the device tests per backend at 1 and 2 ranks (tests/gpu/test_device: arrays and
#      the comm layer; tests/gpu/test_device_ops: operators and solvers against host arrays),
#      the device kernels against the host's (tests/kernels/test_kernels_device), then (when
#      built here) the whole CPU suite against the same build, compute-sanitizer memcheck on
#      both device tests, bench_device, bench_device_ops and the device stencil table
#      (bench_kernels -d);
#   4. prints one pass/fail line per check. A backend that cannot be exercised here says so
#      ("not exercised: why") instead of passing: mpi_cuda_aware needs an MPI that reads device
#      memory (Debian's Open MPI does not; see docs/gpu.md to build one), NCCL at 2 ranks needs
#      two GPUs (one GPU per rank), so on one GPU only its 1-rank run counts.
# Usage: tests/gpu/run.sh [build-dir]      (from anywhere; exit 0 when nothing failed)
# MPI: gpu-deps/ompi when present (a CUDA-aware Open MPI that tests/gpu/bundle.sh built), or
# when gpu-deps/ holds Debian's Open MPI source package (tests/gpu/fetch-deps.sh) it is built
# here with --with-cuda into <build-dir>/ompi (a few minutes on 16 cores); otherwise mpicc and
# mpiexec on PATH, or MPI_HOME=/path/to/mpi. Building here also needs cmake >= 3.25, a C/C++
# compiler, the CUDA toolkit, OpenBLAS and CMocka (pkg-config names openblas, cmocka), and
# FFTW (fftw3, fftw3f): without it the FFT and MDC operators do not exist in the build, so
# their device paths (cuFFT) are not exercised (test_kernels_device says so).
# Output: the log goes to <build-dir>/gpu-run.log, and also to $PLM_GPU_LOG when set.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT=$PWD
BUILD=${1:-$ROOT/build-gpu}
JOBS=$(nproc)
LOG=$BUILD/gpu-run.log
mkdir -p "$BUILD" && : > "$LOG"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OPENBLAS_NUM_THREADS=1

say() { printf '== %s\n' "$*"; }
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  say "no NVIDIA GPU visible (nvidia-smi -L fails): nothing to run"
  exit 77
fi
nvidia-smi -L
CUDA=${CUDA_HOME:-/usr/local/cuda}
export PATH=$PATH:$CUDA/bin
start=$SECONDS

# A prebuilt CUDA-aware Open MPI (bundle.sh) is relocatable: OPAL_PREFIX says where it is now.
if [ -x "$ROOT/gpu-deps/ompi/bin/mpiexec" ]; then
  export MPI_HOME=$ROOT/gpu-deps/ompi OPAL_PREFIX=$ROOT/gpu-deps/ompi PATH=$ROOT/gpu-deps/ompi/bin:$PATH
  export LD_LIBRARY_PATH=$MPI_HOME/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

# Open MPI from Debian's source package, configured with CUDA. Only the upstream tarball is
# used: Debian's patches touch Makefile.am/configure.ac, which would need autoreconf (autotools)
# on the GPU machine, and they fix packaging, not the library.
build_ompi() {
  local src orig=$(ls "$ROOT"/gpu-deps/openmpi_*.orig.tar.* 2>/dev/null | head -1)
  [ -n "$orig" ] || return 1
  [ -x "$BUILD/ompi/bin/mpicc" ] && return 0
  say "building CUDA-aware Open MPI from $(basename "$orig")"
  src=$BUILD/ompi-src && rm -rf "$src" && mkdir -p "$src"
  tar -xf "$orig" -C "$src" --strip-components=1
  (cd "$src" && ./configure --prefix="$BUILD/ompi" --with-cuda="$CUDA" --disable-mpi-fortran --disable-oshmem \
     --without-ucx --with-hwloc=internal --with-libevent=internal --with-pmix=internal \
     --enable-mpirun-prefix-by-default && make -j "$JOBS" && make install) >> "$LOG" 2>&1
}

# Adds to LD_LIBRARY_PATH the folders of the CUDA, cuBLAS, cuFFT and NCCL libraries a program needs
# and the loader does not find (a CUDA image may keep them in the Python packages of PyTorch).
find_missing_libs() {
  local prog=$1 lib dir
  for lib in $(ldd "$prog" 2>/dev/null | awk '/not found/ { print $1 }'); do
    dir=$(find "$CUDA"/lib64 "$CUDA"/lib "$CUDA"/targets/*/lib /usr/local/cuda*/lib64 /usr/lib/x86_64-linux-gnu \
               /opt /usr/local/lib -name "$lib" 2>/dev/null | head -1)
    [ -n "$dir" ] && export LD_LIBRARY_PATH=$(dirname "$dir"):$LD_LIBRARY_PATH
  done
  if ldd "$prog" | grep -q 'not found'; then
    ldd "$prog" | grep 'not found'; return 1
  fi
}

if [ "${PLM_GPU_PREBUILT:-0}" = 1 ]; then
  BIN=$ROOT/gpu-deps/prebuilt/bin
  [ -x "$BIN/test_device" ] || { say "no gpu-deps/prebuilt: run tests/gpu/bundle.sh where the tools are"; exit 2; }
  libs=$BUILD/prebuilt-lib && mkdir -p "$libs"
  tar -C "$libs" -xJf "$ROOT/gpu-deps/prebuilt/syslibs.tar.xz"
  export LD_LIBRARY_PATH=$ROOT/gpu-deps/prebuilt/lib:$libs:$LD_LIBRARY_PATH
  for p in "$BIN"/*; do find_missing_libs "$p" || { say "libraries missing for $p"; exit 2; }; done
  say "prebuilt programs from gpu-deps/prebuilt; MPI: $(command -v mpiexec)"
else
  if [ -z "${MPI_HOME:-}" ] && build_ompi; then
    export PATH=$BUILD/ompi/bin:$PATH MPI_HOME=$BUILD/ompi
    say "Open MPI with CUDA in $BUILD/ompi ($((SECONDS - start)) s)"
  elif [ -f "$BUILD/ompi-src/config.log" ]; then
    tail -30 "$LOG"; say "the Open MPI build failed (see $LOG)"; exit 1
  fi
  [ -n "${MPI_HOME:-}" ] && export PATH=$MPI_HOME/bin:$PATH
  command -v mpicc >/dev/null && command -v mpiexec >/dev/null ||
    { say "no MPI: run tests/gpu/fetch-deps.sh first, or put mpicc and mpiexec on PATH / set MPI_HOME"; exit 2; }
  mpi_flags=()
  [ -n "${MPI_HOME:-}" ] && mpi_flags=(-DMPI_C_COMPILER="$MPI_HOME/bin/mpicc" -DMPI_CXX_COMPILER="$MPI_HOME/bin/mpicxx"
                                      -DMPIEXEC_EXECUTABLE="$MPI_HOME/bin/mpiexec")
  say "configure and build ($BUILD)"
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DPLM_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=native \
        -DPLM_BUILD_TESTS=ON -DPLM_BUILD_EXAMPLES=OFF -DPLM_BUILD_BENCH=ON "${mpi_flags[@]}" >> "$LOG" 2>&1 &&
    cmake --build "$BUILD" -j "$JOBS" >> "$LOG" 2>&1 ||
    { tail -40 "$LOG"; say "build failed ($((SECONDS - start)) s)"; exit 1; }
  BIN=$BUILD/bin-gpu && mkdir -p "$BIN"
  cp "$BUILD"/tests/gpu/test_device "$BUILD"/tests/gpu/test_device_ops "$BUILD"/tests/kernels/test_kernels_device \
     "$BUILD"/bench/bench_device "$BUILD"/bench/bench_device_ops "$BUILD"/bench/bench_kernels "$BIN/"
fi
say "ready in $((SECONDS - start)) s: $(ompi_info --parsable --all 2>/dev/null | grep -m1 mpi_built_with_cuda_support:value || echo "MPI $(command -v mpiexec)")"

TESTS=(test_device test_device_ops)
declare -A verdict
run_backend() {  # test backend ranks
  local t=$1 b=$2 n=$3 out rc
  say "$t $b np$n"
  out=$(timeout 300 mpiexec -n "$n" "$BIN/$t" "$b" 2>&1); rc=$?
  printf '%s\n' "$out" >> "$LOG"
  case $rc in
    0) verdict[$t/$b/$n]="passed" ;;
    77) verdict[$t/$b/$n]="not exercised: $(printf '%s\n' "$out" | grep -m1 -E 'skipped|share|comm_create' | cut -c1-90)" ;;
    124) verdict[$t/$b/$n]="FAILED (timeout)" ;;
    *) verdict[$t/$b/$n]="FAILED (rc $rc; see $LOG)"; printf '%s\n' "$out" | tail -15 ;;
  esac
}
for t in "${TESTS[@]}"; do
  for b in mpi_staged mpi_cuda_aware nccl auto; do
    for n in 1 2; do
      if [ "$b" = mpi_cuda_aware ]; then export PLM_TEST_REQUIRE_CUDA_AWARE=1; else unset PLM_TEST_REQUIRE_CUDA_AWARE; fi
      run_backend "$t" "$b" "$n"
    done
  done
done
unset PLM_TEST_REQUIRE_CUDA_AWARE

kernels="not exercised: no test_kernels_device"
if [ -x "$BIN/test_kernels_device" ]; then
  say "device kernels against the host's (test_kernels_device)"
  out=$(timeout 300 "$BIN/test_kernels_device" 2>&1); rc=$?
  printf '%s\n' "$out" >> "$LOG"
  case $rc in
    0) kernels="passed" ;;
    *) kernels="FAILED (rc $rc; see $LOG)"; printf '%s\n' "$out" | tail -15 ;;
  esac
fi

cpu="not exercised: prebuilt programs (CI runs the CPU suite)"
if [ "${PLM_GPU_PREBUILT:-0}" != 1 ]; then
  say "CPU suite against the CUDA build"
  if ctest --test-dir "$BUILD" -j "$JOBS" -LE gpu --timeout 300 >> "$LOG" 2>&1; then cpu="passed"
  else cpu="FAILED: $(ctest --test-dir "$BUILD" -N -LE gpu | awk '/Total Tests:/ {print $3}') tests, see $LOG"; fi
fi

memcheck="not exercised: compute-sanitizer not found"
if [ -x "$CUDA/bin/compute-sanitizer" ]; then
  say "compute-sanitizer memcheck (test_device mpi_staged, 1 rank)"
  if PLM_TEST_QUICK=1 timeout 300 mpiexec -n 1 "$CUDA/bin/compute-sanitizer" --tool memcheck --error-exitcode 1 \
       "$BIN/test_device" mpi_staged >> "$LOG" 2>&1 &&
     PLM_TEST_QUICK=1 timeout 300 mpiexec -n 1 "$CUDA/bin/compute-sanitizer" --tool memcheck --error-exitcode 1 \
       "$BIN/test_device_ops" mpi_staged >> "$LOG" 2>&1; then memcheck="passed"
  else memcheck="FAILED (see $LOG)"; fi
fi

say "bench_device (1 rank)"
timeout 200 mpiexec -n 1 "$BIN/bench_device" 2>&1 | tee -a "$LOG"
say "bench_device_ops (1 rank)"
timeout 200 mpiexec -n 1 "$BIN/bench_device_ops" 2>&1 | tee -a "$LOG"
if [ -x "$BIN/bench_kernels" ]; then
  say "device stencils (bench_kernels -d)"
  timeout 200 "$BIN/bench_kernels" -d 2>&1 | tee -a "$LOG"
fi

printf '\n%-36s %s\n' "check" "result"
for t in "${TESTS[@]}"; do
  for b in mpi_staged mpi_cuda_aware nccl auto; do
    for n in 1 2; do printf '%-36s %s\n' "$t $b np$n" "${verdict[$t/$b/$n]}"; done
  done
done
printf '%-36s %s\n' "test_kernels_device" "$kernels" "CPU suite (ctest -LE gpu)" "$cpu" "memcheck" "$memcheck"
say "total $((SECONDS - start)) s; log: $LOG"
[ -n "${PLM_GPU_LOG:-}" ] && cp "$LOG" "$PLM_GPU_LOG"
! grep -q FAILED <<< "${verdict[*]} $kernels $cpu $memcheck"
