# Install rules. Component "profiler": trainlab's profiler as a CMake package for a user's own
# LibTorch loop (find_package(trainlab) -> trainlab::profiler, trainlab::profiler_torch), with
# its headers under include/trainlab/ (profiler/*.h, plus core/errors.h for InputError and
# core/profile.h, the Profile its Session returns).
# Component "cli": the trainlab command.
include(CMakePackageConfigHelpers)

install(TARGETS trainlab_profiler trainlab_profiler_torch trainlab_core EXPORT trainlabTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT profiler)
file(GLOB _trainlab_profiler_headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/profiler/*.h)
install(FILES ${_trainlab_profiler_headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/trainlab/profiler COMPONENT profiler)
install(FILES ${PROJECT_SOURCE_DIR}/core/errors.h ${PROJECT_SOURCE_DIR}/core/profile.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/trainlab/core COMPONENT profiler)
install(EXPORT trainlabTargets NAMESPACE trainlab:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/trainlab
        COMPONENT profiler)

# The config re-finds what the static libraries link: CUDA's targets only when CUPTI/NVTX were used.
set(TRAINLAB_PROFILER_NEEDS_CUDA_TOOLKIT OFF)
if(TARGET CUDA::cupti OR TARGET CUDA::nvtx3)
  set(TRAINLAB_PROFILER_NEEDS_CUDA_TOOLKIT ON)
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/trainlabConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/trainlabConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/trainlab)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/trainlabConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/trainlabConfig.cmake ${PROJECT_BINARY_DIR}/trainlabConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/trainlab COMPONENT profiler)

install(TARGETS trainlab trainlab-train RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)
