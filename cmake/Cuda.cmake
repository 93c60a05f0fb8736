# The CUDA and NCCL options. Both default to ON when the toolkit (nvcc, cudart, cuBLAS, cuFFT) and
# NCCL (nccl.h, libnccl) are found; a build without them is host-only. No GPU is needed to
# build: device code is compiled for CMAKE_CUDA_ARCHITECTURES (default 80;90: A100, H100/H200).
#   -DPLM_WITH_CUDA=OFF          host-only build even where CUDA is installed
#   -DPLM_WITH_NCCL=OFF          CUDA without the NCCL backend
#   -DCUDAToolkit_ROOT=DIR       a toolkit outside PATH and /usr/local/cuda
#   -DNCCL_ROOT=DIR              an NCCL outside the toolkit
# Sets PLM_HAVE_CUDA / PLM_HAVE_NCCL (ON/OFF) for src/CMakeLists.txt and packaging.

#   -DPLM_DEVICE_EMULATION=ON    no CUDA: the emulated device of src/emu stands in for the
#                                runtime, cuBLAS, cuFFT and NCCL, so every device code path is
#                                built for the host and runs in CI (docs/gpu.md). Implies
#                                PLM_WITH_CUDA=OFF; PLM_HAVE_CUDA and PLM_HAVE_NCCL are ON.
option(PLM_DEVICE_EMULATION "Emulate the CUDA device, cuBLAS, cuFFT and NCCL on the host (src/emu)" OFF)

include(CheckLanguage)
# nvcc is often installed outside PATH (Debian's CUDA repositories, the runfile installer).
if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
  find_program(PLM_NVCC nvcc HINTS ${CUDAToolkit_ROOT} ENV CUDA_HOME PATH_SUFFIXES bin
               PATHS /usr/local/cuda/bin NO_CACHE)
  if(PLM_NVCC)
    set(ENV{CUDACXX} "${PLM_NVCC}")
  endif()
endif()
if(NOT PLM_DEVICE_EMULATION)
  check_language(CUDA)
endif()
if(CMAKE_CUDA_COMPILER AND NOT PLM_DEVICE_EMULATION)
  set(plm_cuda_found ON)
else()
  set(plm_cuda_found OFF)
endif()
option(PLM_WITH_CUDA "Build the CUDA device memory, kernels and device backends" ${plm_cuda_found})

set(PLM_HAVE_CUDA OFF)
set(PLM_HAVE_NCCL OFF)
if(PLM_WITH_CUDA)
  if(NOT plm_cuda_found)
    message(FATAL_ERROR "PLM_WITH_CUDA=ON but no CUDA compiler was found: set CUDACXX or CUDAToolkit_ROOT")
  endif()
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  find_package(CUDAToolkit REQUIRED)
  if(NOT TARGET CUDA::cublas)
    message(FATAL_ERROR "PLM_WITH_CUDA=ON but cuBLAS was not found in ${CUDAToolkit_LIBRARY_DIR}")
  endif()
  if(NOT TARGET CUDA::cufft)
    message(FATAL_ERROR "PLM_WITH_CUDA=ON but cuFFT was not found in ${CUDAToolkit_LIBRARY_DIR}")
  endif()
  set(PLM_HAVE_CUDA ON)

  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${NCCL_ROOT} ENV NCCL_HOME ${CUDAToolkit_INCLUDE_DIRS}
            PATH_SUFFIXES include)
  find_library(NCCL_LIBRARY nccl HINTS ${NCCL_ROOT} ENV NCCL_HOME ${CUDAToolkit_LIBRARY_DIR}
               PATH_SUFFIXES lib lib64)
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(plm_nccl_found ON)
  else()
    set(plm_nccl_found OFF)
  endif()
  option(PLM_WITH_NCCL "Build the NCCL backend" ${plm_nccl_found})
  if(PLM_WITH_NCCL)
    if(NOT plm_nccl_found)
      message(FATAL_ERROR "PLM_WITH_NCCL=ON but nccl.h / libnccl were not found: set NCCL_ROOT")
    endif()
    add_library(plm_nccl UNKNOWN IMPORTED)
    set_target_properties(plm_nccl PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
                          INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
    set(PLM_HAVE_NCCL ON)
  endif()
elseif(PLM_WITH_NCCL)
  message(FATAL_ERROR "PLM_WITH_NCCL=ON needs PLM_WITH_CUDA=ON")
endif()
if(PLM_DEVICE_EMULATION)
  if(PLM_WITH_CUDA)
    message(FATAL_ERROR "PLM_DEVICE_EMULATION=ON replaces CUDA: configure with PLM_WITH_CUDA=OFF")
  endif()
  if(PLM_SANITIZE)
    # Its kernels' threads are fibers on stacks of its own, which the sanitizers are not told of.
    message(FATAL_ERROR "PLM_DEVICE_EMULATION=ON does not combine with PLM_SANITIZE")
  endif()
  # Kernels run on 16 KiB fiber stacks: a library function's first call through the PLT (libm's
  # fma in a stencil pass) would resolve its symbol there, and the dynamic linker's resolver
  # saves the whole vector state (kilobytes with AVX-512) on that stack. Bind every symbol at load.
  add_link_options(LINKER:-z,now)
  set(PLM_HAVE_CUDA ON)
  set(PLM_HAVE_NCCL ON)
  set(CMAKE_CUDA_ARCHITECTURES "emulated")
endif()
message(STATUS "pylopsmpi: CUDA ${PLM_HAVE_CUDA} (${CMAKE_CUDA_ARCHITECTURES}), NCCL ${PLM_HAVE_NCCL}")
