# The SMPI build (PLM_SMPI=ON, preset `smpi`): the library, the C examples and the benchmarks
# compiled with SimGrid's smpicc/smpicxx (Debian: libsimgrid-dev 3.32) and run by smpirun on a
# simulated platform (platforms/*.xml). Host memory only: no CUDA, Fortran or Python.
#
# How the ranks stay apart. SMPI runs every rank of a job inside one process. smpicc links an
# "executable" as a shared object that smpirun dlopens once per rank from a private copy
# (smpi/privatization:dlopen, the default on Linux), so each rank has its own globals and
# thread-locals. The library is therefore a STATIC archive in this build, linked into every
# program: it is part of that copy, and its state (last-error text, allocation hooks, the
# communicator attribute key) is per rank, with no smpi/privatize-libs list to maintain.
# OpenBLAS and FFTW stay shared and common to all ranks; the library uses them single-threaded
# and they keep no per-rank state (FFTW's planner is serialised by SMPI's one-rank-at-a-time
# scheduling).
#
# The MPI target is an empty interface: smpicc adds SMPI's <mpi.h> and libsimgrid itself.
# MPIEXEC_EXECUTABLE is smpirun; tests and scripts pass -platform and -hostfile.
# SMPI_NO_OVERRIDE_MALLOC keeps smpi_helpers.h (which smpicc force-includes) from turning
# malloc/free into macros, which would break std::free in C++; the library calls SMPI's shared
# allocation itself where the benchmarks ask for it (src/core/sim.cpp).

if(NOT CMAKE_C_COMPILER MATCHES "smpicc" OR NOT CMAKE_CXX_COMPILER MATCHES "smpicxx")
  message(FATAL_ERROR "PLM_SMPI=ON needs CMAKE_C_COMPILER=smpicc and CMAKE_CXX_COMPILER=smpicxx "
                      "(cmake --preset smpi sets both; apt install libsimgrid-dev)")
endif()
find_program(PLM_SMPIRUN smpirun REQUIRED)
execute_process(COMMAND ${CMAKE_C_COMPILER} --version OUTPUT_VARIABLE PLM_SIMGRID_VERSION
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
message(STATUS "SMPI build: ${PLM_SIMGRID_VERSION}, runs under ${PLM_SMPIRUN}")

add_library(MPI::MPI_C INTERFACE IMPORTED)
set(MPIEXEC_EXECUTABLE ${PLM_SMPIRUN})
set(MPIEXEC_NUMPROC_FLAG -np)
set(MPI_C_COMPILER ${CMAKE_C_COMPILER})
add_compile_definitions(SMPI_NO_OVERRIDE_MALLOC=1 PLM_SMPI=1)

# smpirun copies each program once per rank (1024 copies at 1024 ranks): no debug information
# (-g would make each copy ~20 MB instead of ~1.5 MB), and the programs stripped.
set(PLM_ABI_DEBUG_INFO OFF CACHE BOOL "off in the SMPI build (no ABI check here)" FORCE)
add_link_options(-s)

foreach(opt PLM_WITH_CUDA PLM_WITH_PYTHON)
  set(${opt} OFF CACHE BOOL "off in the SMPI build" FORCE)
endforeach()
set(PLM_WITH_FORTRAN OFF CACHE STRING "off in the SMPI build" FORCE)
