# Install rules and the two ways outside projects find the library:
#   - a CMake package:   find_package(pylopsmpi CONFIG) -> target pylopsmpi::pylopsmpi
#   - a pkg-config file: pkg-config --cflags --libs pylopsmpi (compile with mpicc)
# Included at the end of the top CMakeLists.txt, after the `pylopsmpi` target exists.
#
# Everything here honours an install-time prefix (`cmake --install build --prefix DIR`) and DESTDIR:
# the CMake package is relocatable, and the .pc file gets its prefix when it is installed.

include(CMakePackageConfigHelpers)

set(PLM_CMAKE_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/pylopsmpi"
    CACHE STRING "Where pylopsmpiConfig.cmake is installed (relative to the prefix, or absolute)")
set(PLM_PKGCONFIG_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
    CACHE STRING "Where pylopsmpi.pc is installed (relative to the prefix, or absolute)")

# Backends compiled into this build, as plm_backend_name() spells them, in plm_backend_t order;
# the install test checks this list against plm_backend_compiled().
set(PLM_BACKENDS_BUILT "mpi_host")
if(PLM_HAVE_CUDA)
  list(APPEND PLM_BACKENDS_BUILT mpi_cuda_aware mpi_staged)
endif()
if(PLM_HAVE_NCCL)
  list(APPEND PLM_BACKENDS_BUILT nccl)
endif()
string(REPLACE ";" "," PLM_PC_BACKENDS "${PLM_BACKENDS_BUILT}")
if(PLM_BACKENDS_BUILT MATCHES "mpi_cuda_aware|mpi_staged|nccl")
  set(PLM_PC_CUDA_ENABLED yes)
else()
  set(PLM_PC_CUDA_ENABLED no)
endif()

# --- library, with its SONAME chain libpylopsmpi.so -> .so.0.MINOR -> .so.VERSION ------------------
install(TARGETS pylopsmpi
  EXPORT pylopsmpiTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Runtime NAMELINK_COMPONENT Development
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Development
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT Runtime
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# --- public headers: pylopsmpi.h, the per-object headers it includes, the generated version header --
install(FILES
  ${PROJECT_SOURCE_DIR}/include/pylopsmpi.h
  ${PROJECT_BINARY_DIR}/include/pylopsmpi_version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT Development)
install(FILES ${PLM_OBJECT_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/pylopsmpi COMPONENT Development)

# --- pkg-config ------------------------------------------------------------------------------------
# libdir/includedir are "${prefix}/<relative dir>" unless GNUInstallDirs was given absolute paths,
# which are used as they are.
foreach(kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${kind}}")
    set(PLM_PC_${kind} "${CMAKE_INSTALL_${kind}}")
  else()
    set(PLM_PC_${kind} "\${prefix}/${CMAKE_INSTALL_${kind}}")
  endif()
endforeach()

# Static-link needs of the library (only a static consumer would use them; we ship a shared
# library): OpenBLAS (and FFTW3 when built with it) as pkg-config found them, the C++ runtime and libm. MPI is left out on purpose:
# consumers compile and link with their MPI's wrapper (mpicc), which supplies it.
set(PLM_PC_LIBS_PRIVATE ${OPENBLAS_LDFLAGS})
if(PLM_WITH_FFTW)
  list(APPEND PLM_PC_LIBS_PRIVATE ${FFTW_LDFLAGS})
endif()
string(REPLACE ";" " " PLM_PC_LIBS_PRIVATE "${PLM_PC_LIBS_PRIVATE}")
string(STRIP "${PLM_PC_LIBS_PRIVATE} -lstdc++ -lm" PLM_PC_LIBS_PRIVATE)
if(MPI_C_COMPILER)
  set(PLM_PC_MPICC "${MPI_C_COMPILER}")
else()
  set(PLM_PC_MPICC mpicc)
endif()

# Stage 1 (configure time): everything but the prefix, which stays as the literal
# @CMAKE_INSTALL_PREFIX@. The build-tree copy gets the configure-time prefix for inspection.
set(PLM_PC_PREFIX "@CMAKE_INSTALL_PREFIX@")
configure_file(${PROJECT_SOURCE_DIR}/pkgconfig/pylopsmpi.pc.in
               ${PROJECT_BINARY_DIR}/pkgconfig/pylopsmpi.pc.prefix-in @ONLY)
configure_file(${PROJECT_BINARY_DIR}/pkgconfig/pylopsmpi.pc.prefix-in
               ${PROJECT_BINARY_DIR}/pkgconfig/pylopsmpi.pc @ONLY)
# Stage 2 (install time): substitute the prefix the install actually uses, then install that file.
install(CODE "
  configure_file(\"${PROJECT_BINARY_DIR}/pkgconfig/pylopsmpi.pc.prefix-in\"
                 \"${PROJECT_BINARY_DIR}/pkgconfig/install/pylopsmpi.pc\" @ONLY)
" COMPONENT Development)
install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/install/pylopsmpi.pc
        DESTINATION ${PLM_PKGCONFIG_INSTALL_DIR} COMPONENT Development)

# --- CMake package ---------------------------------------------------------------------------------
install(EXPORT pylopsmpiTargets
  NAMESPACE pylopsmpi::
  FILE pylopsmpiTargets.cmake
  DESTINATION ${PLM_CMAKE_INSTALL_DIR} COMPONENT Development)

configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/pylopsmpiConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/pylopsmpiConfig.cmake
  INSTALL_DESTINATION ${PLM_CMAKE_INSTALL_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR)

# While in 0.x every minor may break the ABI (SONAME 0.MINOR), so only the same minor is compatible.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(PLM_PACKAGE_COMPATIBILITY SameMinorVersion)
else()
  set(PLM_PACKAGE_COMPATIBILITY SameMajorVersion)
endif()
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/pylopsmpiConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY ${PLM_PACKAGE_COMPATIBILITY})

install(FILES
  ${PROJECT_BINARY_DIR}/cmake/pylopsmpiConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/pylopsmpiConfigVersion.cmake
  DESTINATION ${PLM_CMAKE_INSTALL_DIR} COMPONENT Development)

# --- examples and bindings -------------------------------------------------------------------------
# share/pylopsmpi/examples builds on its own against the installed package: its CMakeLists.txt
# finds pylopsmpi when it is the top project, and its Makefile uses pkg-config + mpicc.
set(PLM_DATA_INSTALL_DIR "${CMAKE_INSTALL_DATADIR}/pylopsmpi"
    CACHE STRING "Where the examples and bindings sources are installed (relative to the prefix, or absolute)")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION ${PLM_DATA_INSTALL_DIR}/examples
        COMPONENT Examples
        FILES_MATCHING PATTERN "*.c" PATTERN "*.h" PATTERN "*.md" PATTERN "CMakeLists.txt" PATTERN "Makefile")
# The bindings folder as it is (today its plan, README.md), without build or Python byproducts.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/bindings/ DESTINATION ${PLM_DATA_INSTALL_DIR}/bindings
        COMPONENT Examples
        PATTERN "__pycache__" EXCLUDE PATTERN "*.pyc" EXCLUDE PATTERN "*.o" EXCLUDE
        PATTERN "*.mod" EXCLUDE PATTERN "*.so" EXCLUDE PATTERN "build*" EXCLUDE)

# --- documentation ---------------------------------------------------------------------------------
# README, CHANGELOG and docs/ go beside examples/ and bindings/, as in the source tree, so the
# pages' links into them hold in the installed copy (tests/docs/run-doc-blocks checks them).
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/CHANGELOG.md
        DESTINATION ${PLM_DATA_INSTALL_DIR} COMPONENT Documentation)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${PLM_DATA_INSTALL_DIR}/docs
        COMPONENT Documentation FILES_MATCHING PATTERN "*.md" PATTERN "*.png")
