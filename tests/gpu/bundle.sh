#!/usr/bin/env bash
# Prepares a GPU run on a machine that has the build tools but no GPU (a CI or dev machine),
# for a GPU machine that has CUDA but no MPI, no OpenBLAS and no network:
#   1. builds Debian's Open MPI source (tests/gpu/fetch-deps.sh) with --with-cuda into
#      gpu-deps/ompi (once; ~6 min on 2 cores): a CUDA-aware MPI, relocatable (OPAL_PREFIX);
#   2. builds the CUDA build of pylopsmpi against it, for the GPU's architecture
#      (CUDA_ARCH, default 90: H100/H200) into build-gpu/;
#   3. copies what the GPU run needs into gpu-deps/prebuilt/: bin/ (the GPU test and bench
#      programs), lib/ (libpylopsmpi, and the system libraries a bare CUDA image lacks:
#      OpenBLAS, gfortran, quadmath, FFTW (double and float), compressed).
# Then carry gpu-deps/ to the GPU machine and run PLM_GPU_PREBUILT=1 tests/gpu/run.sh there
# (docs/gpu.md). gpu-deps/ is git-ignored. About 25 MB with Open MPI.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT=$PWD
DEPS=$ROOT/gpu-deps
BUILD=${BUILD_DIR:-$ROOT/build-gpu}
JOBS=$(nproc)
CUDA=${CUDA_HOME:-/usr/local/cuda}

orig=$(ls "$DEPS"/openmpi_*.orig.tar.* 2>/dev/null | head -1 || true)
[ -n "$orig" ] || { echo "bundle: no Open MPI source in gpu-deps/: run tests/gpu/fetch-deps.sh first" >&2; exit 2; }
if [ ! -x "$DEPS/ompi/bin/mpicc" ]; then
  echo "== building CUDA-aware Open MPI from $(basename "$orig") into gpu-deps/ompi"
  src=$(mktemp -d)
  tar -xf "$orig" -C "$src" --strip-components=1
  (cd "$src" && ./configure --prefix="$DEPS/ompi" --with-cuda="$CUDA" --disable-mpi-fortran --disable-oshmem \
     --without-ucx --with-hwloc=internal --with-libevent=internal --with-pmix=internal --disable-static \
     --enable-mpirun-prefix-by-default && make -j "$JOBS" && make install) > "$DEPS/ompi-build.log" 2>&1
  rm -rf "$src"
fi

echo "== building pylopsmpi (CUDA arch ${CUDA_ARCH:-90}) into $BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DPLM_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" \
      -DPLM_BUILD_TESTS=ON -DPLM_BUILD_EXAMPLES=OFF -DPLM_BUILD_BENCH=ON \
      -DMPI_C_COMPILER="$DEPS/ompi/bin/mpicc" -DMPI_CXX_COMPILER="$DEPS/ompi/bin/mpicxx" \
      -DMPIEXEC_EXECUTABLE="$DEPS/ompi/bin/mpiexec" > "$DEPS/configure.log"
GPU_PROGRAMS=(tests/gpu/test_device tests/gpu/test_device_ops tests/kernels/test_kernels_device bench/bench_device
              bench/bench_device_ops bench/bench_kernels)
cmake --build "$BUILD" -j "$JOBS" --target $(for p in "${GPU_PROGRAMS[@]}"; do basename "$p"; done)

out=$DEPS/prebuilt
rm -rf "$out" && mkdir -p "$out/bin" "$out/lib"
for p in "${GPU_PROGRAMS[@]}"; do cp "$BUILD/$p" "$out/bin/"; done
cp -P "$BUILD"/src/libpylopsmpi.so* "$out/lib/"
# System libraries of this machine that a CUDA image may lack (CUDA, NCCL, cuBLAS and cuFFT
# are found on the GPU machine itself: run.sh looks for them). FFTW: the host FFTs the device
# FFT, MDC and cuFFT-plan tests compare against.
sys=()
for lib in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0 libfftw3.so.3 libfftw3f.so.3; do
  path=$(ldd "$BUILD/src/libpylopsmpi.so" | awk -v l="$lib" '$1 == l { print $3 }')
  [ -n "$path" ] && sys+=("$(readlink -f "$path"):$lib")
done
staging=$(mktemp -d)
for s in "${sys[@]}"; do cp "${s%%:*}" "$staging/${s##*:}"; done
tar -C "$staging" -cJf "$out/syslibs.tar.xz" .
rm -rf "$staging"
du -sh "$DEPS/ompi" "$out"
echo "== done: carry gpu-deps/ and run PLM_GPU_PREBUILT=1 tests/gpu/run.sh on the GPU machine"
