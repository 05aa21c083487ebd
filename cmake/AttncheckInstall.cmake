# `cmake --install build` puts the CLI, the plugin headers, the public C++ API
# headers, the library and a package configuration in place, so plugin authors write
#   find_package(attncheck REQUIRED)
#   target_link_libraries(my_plugin PRIVATE attncheck::plugin)
#   attncheck_add_test(NAME my_plugin_laws PLUGIN my_plugin)        # cmake/attncheckTesting.cmake
# and C++ code tests its own attention function with attncheck::check or
# ATTNCHECK_TEST (include/attncheck/attncheck.hpp, gtest.hpp), linking
# attncheck::attncheck or attncheck::gtest. The library's own headers go
# under include/attncheck/internal/ (what the public API is built on; not a
# stable interface). examples/consumer/ is a complete consumer, built against
# the install in CTest (tests/consumer/).
include_guard(GLOBAL)
include(CMakePackageConfigHelpers)

# The program, exported as attncheck::cli (the library is attncheck::attncheck).
set_target_properties(attncheck PROPERTIES EXPORT_NAME cli)
install(TARGETS attncheck EXPORT attncheckTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/attncheck/plugin.h ${PROJECT_SOURCE_DIR}/include/attncheck/plugin_v2.h
              ${PROJECT_SOURCE_DIR}/include/attncheck/plugin_v3.h
              ${PROJECT_SOURCE_DIR}/include/attncheck/attncheck.hpp ${PROJECT_SOURCE_DIR}/include/attncheck/gtest.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/attncheck)
install(TARGETS attncheck_plugin EXPORT attncheckTargets)
install(TARGETS attncheck_lib EXPORT attncheckTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/attncheck/internal
        FILES_MATCHING PATTERN "*.h")
install(EXPORT attncheckTargets NAMESPACE attncheck:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/attncheck)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/attncheckConfig.cmake.in
  ${PROJECT_BINARY_DIR}/attncheckConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/attncheck)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/attncheckConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/attncheckConfig.cmake ${PROJECT_BINARY_DIR}/attncheckConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/attncheckTesting.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/attncheck)
