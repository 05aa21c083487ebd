# `cmake --install build` puts the CLI, the plugin header, the library and a
# package configuration in place, so plugin authors write
#   find_package(attncheck REQUIRED)
#   target_link_libraries(my_plugin PRIVATE attncheck::plugin)
# and C++ code that drives the laws itself links attncheck::attncheck (its
# headers are the tree's own, under include/attncheck/internal/; a stable
# public C++ header is the ecosystem issue's work).
include_guard(GLOBAL)
include(CMakePackageConfigHelpers)

install(TARGETS attncheck RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/attncheck/plugin.h ${PROJECT_SOURCE_DIR}/include/attncheck/plugin_v2.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/attncheck)
install(TARGETS attncheck_plugin EXPORT attncheckTargets)
install(TARGETS attncheck_lib EXPORT attncheckTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/attncheck/internal
        FILES_MATCHING PATTERN "*.h")
install(EXPORT attncheckTargets NAMESPACE attncheck:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/attncheck)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/attncheckConfig.cmake.in
  ${PROJECT_BINARY_DIR}/attncheckConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/attncheck)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/attncheckConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/attncheckConfig.cmake ${PROJECT_BINARY_DIR}/attncheckConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/attncheck)
