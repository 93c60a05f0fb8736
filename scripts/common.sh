# shellcheck shell=bash disable=SC2034
# Shared settings of the scripts in scripts/ (sourced, not run).
#   PLM_ROOT       the source tree
#   PLM_JOBS       parallel build jobs (env JOBS, else the number of cores)
#   PLM_MPIEXEC    array: mpiexec plus the flags this MPI needs for more ranks than cores
# and the environment Open MPI needs to run as root (containers, CI) and to keep OpenBLAS from
# starting threads in every rank - the same settings tests/CMakeLists.txt gives CTest.

PLM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PLM_JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"

plm_log() { printf '\n=== %s\n' "$*"; }
plm_die() { printf 'error: %s\n' "$*" >&2; exit 1; }

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"

plm_mpiexec_init() {
  local exe
  exe="$(command -v mpiexec || true)"
  [ -n "$exe" ] || plm_die "mpiexec not found (run scripts/install-deps)"
  PLM_MPIEXEC=("$exe")
  if grep -qE 'Open MPI|OpenRTE' <<< "$("$exe" --version 2>&1)"; then
    PLM_MPIEXEC+=(--oversubscribe)
  fi
}
