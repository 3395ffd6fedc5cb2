# Packaging of libtrainrt: CMake package + pkg-config files, docs, and CPack DEB/RPM packages.
# Included at the end of the root CMakeLists.txt. Components (see docs/PACKAGING.md):
#   runtime -> libtrainrt0        libtrainrt.so.0, libtrainrt.so.0.1.0
#   dev     -> libtrainrt-dev     headers, libtrainrt.so, trainrt.pc, lib/cmake/trainrt/
#   cli     -> trainrt            /usr/bin/trainrt, its man page and --help text
#   cuda    -> libtrainrt-cuda0   libtrainrt-cuda.so (only when the module is built)
#   mpi     -> libtrainrt-mpi0    libtrainrt-mpi.so (only when the module is built)
# Packages install under /usr from any build (the libdir is multiarch on Debian whatever the
# prefix: CMakeLists.txt):  cmake -S . -B b -DCMAKE_BUILD_TYPE=Release
#          cmake --build b && (cd b && cpack -G DEB && cpack -G RPM)   # -> b/packages/
include(CMakePackageConfigHelpers)

set(TRAINRT_HOMEPAGE "https://github.com/libtrainrt/trainrt")
set(TRAINRT_MAINTAINER "libtrainrt developers <dev@libtrainrt.invalid>")
# No LICENSE file in the repository: nothing is granted (docs/PACKAGING.md).
set(TRAINRT_LICENSE "LicenseRef-Proprietary")
set(TRAINRT_PKG_RELEASE 1)
set(TRAINRT_DEB_VERSION "${PROJECT_VERSION}-${TRAINRT_PKG_RELEASE}")
set(TRAINRT_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/trainrt")
set(TRAINRT_PKG_DIR "${CMAKE_CURRENT_BINARY_DIR}/packaging")

# ------------------------------------------------------------ CMake package (component dev)
install(EXPORT trainrtTargets NAMESPACE trainrt:: FILE trainrtTargets.cmake
  DESTINATION ${TRAINRT_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/packaging/trainrtConfig.cmake.in
  ${TRAINRT_PKG_DIR}/trainrtConfig.cmake INSTALL_DESTINATION ${TRAINRT_CMAKE_DIR})
write_basic_package_version_file(${TRAINRT_PKG_DIR}/trainrtConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${TRAINRT_PKG_DIR}/trainrtConfig.cmake ${TRAINRT_PKG_DIR}/trainrtConfigVersion.cmake
  DESTINATION ${TRAINRT_CMAKE_DIR} COMPONENT dev)

# ------------------------------------------------------------ pkg-config (component dev)
# prefix = ${pcfiledir}/<relative path from LIBDIR/pkgconfig up to the prefix>
file(RELATIVE_PATH TRAINRT_PC_RELATIVE_PREFIX "${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig"
  "${CMAKE_INSTALL_PREFIX}")
string(REGEX REPLACE "/$" "" TRAINRT_PC_RELATIVE_PREFIX "${TRAINRT_PC_RELATIVE_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/packaging/trainrt.pc.in ${TRAINRT_PKG_DIR}/trainrt.pc @ONLY)
install(FILES ${TRAINRT_PKG_DIR}/trainrt.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
  COMPONENT dev)

# ------------------------------------------------------------ per-package docs
# Debian policy wants /usr/share/doc/<package>/{copyright,changelog.Debian.gz} in every package.
find_program(TRAINRT_GZIP gzip)
set(TRAINRT_PACKAGES runtime libtrainrt0 dev libtrainrt-dev cli trainrt)
if(TARGET trainrt_cuda_module)
  list(APPEND TRAINRT_PACKAGES cuda libtrainrt-cuda0)
endif()
if(TARGET trainrt_mpi_module)
  list(APPEND TRAINRT_PACKAGES mpi libtrainrt-mpi0)
endif()
set(TRAINRT_DEB_SOURCE libtrainrt)
configure_file(${PROJECT_SOURCE_DIR}/packaging/debian/changelog.in
  ${TRAINRT_PKG_DIR}/changelog.Debian @ONLY)
if(TRAINRT_GZIP)
  execute_process(COMMAND ${TRAINRT_GZIP} -9nf ${TRAINRT_PKG_DIR}/changelog.Debian)
endif()
while(TRAINRT_PACKAGES)
  list(POP_FRONT TRAINRT_PACKAGES comp pkg)
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/debian/copyright
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${pkg} COMPONENT ${comp})
  if(TRAINRT_GZIP)
    install(FILES ${TRAINRT_PKG_DIR}/changelog.Debian.gz
      DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${pkg} COMPONENT ${comp})
  endif()
endwhile()

# ------------------------------------------------------------ CLI docs (component cli)
# `trainrt --help` captured at build time: share/doc/trainrt/trainrt-help.txt and man1/trainrt.1.gz
if(TARGET trainrt_cli AND NOT CMAKE_CROSSCOMPILING)
  add_custom_command(
    OUTPUT ${TRAINRT_PKG_DIR}/trainrt-help.txt ${TRAINRT_PKG_DIR}/trainrt.1.gz
    COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:trainrt_cli> -DVERSION=${PROJECT_VERSION}
            -DHELP_OUT=${TRAINRT_PKG_DIR}/trainrt-help.txt -DMAN_OUT=${TRAINRT_PKG_DIR}/trainrt.1
            -P ${PROJECT_SOURCE_DIR}/packaging/make_manpage.cmake
    COMMAND ${TRAINRT_GZIP} -9nf ${TRAINRT_PKG_DIR}/trainrt.1
    DEPENDS trainrt_cli ${PROJECT_SOURCE_DIR}/packaging/make_manpage.cmake
    COMMENT "Generating the trainrt man page and help text"
    VERBATIM)
  add_custom_target(trainrt_cli_docs ALL
    DEPENDS ${TRAINRT_PKG_DIR}/trainrt-help.txt ${TRAINRT_PKG_DIR}/trainrt.1.gz)
  install(FILES ${TRAINRT_PKG_DIR}/trainrt-help.txt
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/trainrt COMPONENT cli)
  install(FILES ${TRAINRT_PKG_DIR}/trainrt.1.gz
    DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT cli)
endif()

# ------------------------------------------------------------ CPack
set(CPACK_PACKAGE_NAME libtrainrt)
set(CPACK_PACKAGE_VENDOR "libtrainrt developers")
set(CPACK_PACKAGE_CONTACT "${TRAINRT_MAINTAINER}")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_HOMEPAGE_URL "${TRAINRT_HOMEPAGE}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "training runtime for small GPT models")
# Packages install under /usr whatever CMAKE_INSTALL_PREFIX a build has (the default
# /usr/local is for `cmake --install`; a package there would sit outside dpkg's tree:
# lintian file-in-unusual-dir, purge warnings). The install paths are relative, so only the
# prefix changes.
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_STRIP_FILES ON)
set(CPACK_SOURCE_IGNORE_FILES "/build[^/]*/" "/\\\\.git/")
set(CPACK_PACKAGE_DIRECTORY "${CMAKE_BINARY_DIR}/packages")

set(CPACK_COMPONENTS_ALL runtime dev cli)
if(TARGET trainrt_cuda_module)
  list(APPEND CPACK_COMPONENTS_ALL cuda)
endif()
if(TARGET trainrt_mpi_module)
  list(APPEND CPACK_COMPONENTS_ALL mpi)
endif()
set(CPACK_COMPONENTS_GROUPING IGNORE)          # one package per component
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_RPM_COMPONENT_INSTALL ON)

set(CPACK_COMPONENT_RUNTIME_DISPLAY_NAME "libtrainrt shared library")
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION "training runtime for small GPT models - shared library
libtrainrt trains, evaluates and samples small GPT-style language models on the
CPU (OpenBLAS/OpenMP) or, with libtrainrt-cuda0, on an NVIDIA GPU. It exposes a
stable C ABI (trainrt.h).
This package contains the shared library.")
set(CPACK_COMPONENT_DEV_DESCRIPTION "training runtime for small GPT models - development files
libtrainrt trains, evaluates and samples small GPT-style language models.
This package contains the C header, the header-only C++ wrapper, the
libtrainrt.so link, the pkg-config file (trainrt) and the CMake package
(find_package(trainrt), target trainrt::trainrt).")
set(CPACK_COMPONENT_CLI_DESCRIPTION "training runtime for small GPT models - command-line tool
The trainrt command prepares byte-level datasets and trains, evaluates,
samples and exports small GPT-style language models described by a TOML
config, using libtrainrt.")
set(CPACK_COMPONENT_CUDA_DESCRIPTION "training runtime for small GPT models - CUDA backend
The CUDA backend module of libtrainrt, loaded at run time by libtrainrt0
(it is found next to libtrainrt.so.0). It needs the NVIDIA driver and the
cuBLASLt library of the CUDA 13 toolkit (libcublasLt.so.13), which is looked
up in /usr/local/cuda/lib64 and the standard library path.")
set(CPACK_COMPONENT_MPI_DESCRIPTION "training runtime for small GPT models - MPI data parallelism
The MPI module of libtrainrt, loaded at run time by libtrainrt0 when a run has
several ranks (mpirun -np N trainrt train run.toml): each rank trains on its
share of every batch and the gradients are summed over MPI. Built against
Open MPI; without it libtrainrt trains in one process.")

# ---- DEB
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${TRAINRT_PKG_RELEASE})
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${TRAINRT_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${TRAINRT_HOMEPAGE}")
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
# dpkg-shlibdeps must see libtrainrt.so.0 (built here, not yet dpkg-owned) and the CUDA
# toolkit's libraries (never dpkg-owned); CPack passes --ignore-missing-info for those.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${CMAKE_BINARY_DIR}")
if(TARGET trainrt_cuda_module AND CUDAToolkit_LIBRARY_DIR)
  list(APPEND CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${CUDAToolkit_LIBRARY_DIR}")
endif()

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libtrainrt0)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA "${PROJECT_SOURCE_DIR}/packaging/debian/triggers"
  "${PROJECT_SOURCE_DIR}/packaging/debian/postinst" "${PROJECT_SOURCE_DIR}/packaging/debian/postrm")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libtrainrt-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libtrainrt0 (= ${TRAINRT_DEB_VERSION})")

set(CPACK_DEBIAN_CLI_PACKAGE_NAME trainrt)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION science)
set(CPACK_DEBIAN_CLI_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_CLI_PACKAGE_DEPENDS "libtrainrt0 (= ${TRAINRT_DEB_VERSION})")

set(CPACK_DEBIAN_CUDA_PACKAGE_NAME libtrainrt-cuda0)
set(CPACK_DEBIAN_CUDA_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_CUDA_PACKAGE_SHLIBDEPS ON)    # libc6/libstdc++6/libgcc-s1; cuBLASLt: see above
set(CPACK_DEBIAN_CUDA_PACKAGE_DEPENDS "libtrainrt0 (= ${TRAINRT_DEB_VERSION})")
set(CPACK_DEBIAN_CUDA_PACKAGE_RECOMMENDS "libcudnn9-cuda-13, libnccl2")
# A dlopen()ed plugin: no ldconfig call (CPack would add one), hence the no-op scripts.
set(CPACK_DEBIAN_CUDA_PACKAGE_CONTROL_EXTRA
  "${PROJECT_SOURCE_DIR}/packaging/debian/postinst" "${PROJECT_SOURCE_DIR}/packaging/debian/postrm")

set(CPACK_DEBIAN_MPI_PACKAGE_NAME libtrainrt-mpi0)
set(CPACK_DEBIAN_MPI_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_MPI_PACKAGE_SHLIBDEPS ON)     # libmpi40 (Open MPI), libc6, libstdc++6
set(CPACK_DEBIAN_MPI_PACKAGE_DEPENDS "libtrainrt0 (= ${TRAINRT_DEB_VERSION})")
set(CPACK_DEBIAN_MPI_PACKAGE_RECOMMENDS "openmpi-bin")
set(CPACK_DEBIAN_MPI_PACKAGE_CONTROL_EXTRA
  "${PROJECT_SOURCE_DIR}/packaging/debian/postinst" "${PROJECT_SOURCE_DIR}/packaging/debian/postrm")

# ---- RPM
set(CPACK_RPM_FILE_NAME RPM-DEFAULT)
set(CPACK_RPM_PACKAGE_RELEASE ${TRAINRT_PKG_RELEASE})
set(CPACK_RPM_PACKAGE_LICENSE "${TRAINRT_LICENSE}")
set(CPACK_RPM_PACKAGE_URL "${TRAINRT_HOMEPAGE}")
set(CPACK_RPM_PACKAGE_VENDOR "libtrainrt developers")
set(CPACK_RPM_PACKAGE_GROUP "Development/Libraries")
set(CPACK_RPM_SPEC_MORE_DEFINE "%define packager ${TRAINRT_MAINTAINER}")
set(CPACK_RPM_RUNTIME_PACKAGE_NAME libtrainrt0)
set(CPACK_RPM_RUNTIME_PACKAGE_SUMMARY "Training runtime for small GPT models (shared library)")
set(CPACK_RPM_DEV_PACKAGE_NAME libtrainrt-dev)
set(CPACK_RPM_DEV_PACKAGE_SUMMARY "Development files for libtrainrt")
set(CPACK_RPM_DEV_PACKAGE_REQUIRES "libtrainrt0 = ${PROJECT_VERSION}")
set(CPACK_RPM_DEV_PACKAGE_PROVIDES "trainrt-devel = ${PROJECT_VERSION}, pkgconfig(trainrt) = ${PROJECT_VERSION}")
set(CPACK_RPM_CLI_PACKAGE_NAME trainrt)
set(CPACK_RPM_CLI_PACKAGE_SUMMARY "Command-line tool to train small GPT models with libtrainrt")
set(CPACK_RPM_CLI_PACKAGE_REQUIRES "libtrainrt0 = ${PROJECT_VERSION}")
set(CPACK_RPM_CUDA_PACKAGE_NAME libtrainrt-cuda0)
set(CPACK_RPM_CUDA_PACKAGE_SUMMARY "CUDA backend module of libtrainrt")
set(CPACK_RPM_CUDA_PACKAGE_REQUIRES "libtrainrt0 = ${PROJECT_VERSION}")
set(CPACK_RPM_MPI_PACKAGE_NAME libtrainrt-mpi0)
set(CPACK_RPM_MPI_PACKAGE_SUMMARY "MPI data-parallel module of libtrainrt")
set(CPACK_RPM_MPI_PACKAGE_REQUIRES "libtrainrt0 = ${PROJECT_VERSION}")
# The runtime package runs ldconfig (no file triggers in CPack).
set(CPACK_RPM_RUNTIME_POST_INSTALL_SCRIPT_FILE "${PROJECT_SOURCE_DIR}/packaging/rpm/ldconfig.sh")
set(CPACK_RPM_RUNTIME_POST_UNINSTALL_SCRIPT_FILE "${PROJECT_SOURCE_DIR}/packaging/rpm/ldconfig.sh")
# Directories owned by the distribution (filesystem, man, pkgconfig, cmake packages).
list(APPEND CPACK_RPM_EXCLUDE_FROM_AUTO_FILELIST_ADDITION
  /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE} /usr/${CMAKE_INSTALL_LIBDIR}
  /usr/${CMAKE_INSTALL_LIBDIR}/pkgconfig /usr/${CMAKE_INSTALL_LIBDIR}/cmake
  /usr/share/doc /usr/share/man /usr/share/man/man1)

include(CPack)
cpack_add_component(runtime DISPLAY_NAME "libtrainrt shared library")
cpack_add_component(dev DISPLAY_NAME "libtrainrt development files" DEPENDS runtime)
cpack_add_component(cli DISPLAY_NAME "trainrt command-line tool" DEPENDS runtime)
if(TARGET trainrt_cuda_module)
  cpack_add_component(cuda DISPLAY_NAME "libtrainrt CUDA backend" DEPENDS runtime)
endif()
if(TARGET trainrt_mpi_module)
  cpack_add_component(mpi DISPLAY_NAME "libtrainrt MPI data parallelism" DEPENDS runtime)
endif()
