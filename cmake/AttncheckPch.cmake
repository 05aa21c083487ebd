# Precompiled headers: the standard library headers (and GoogleTest) that most
# files include are parsed once per target family instead of once per file.
# Parsing them is about half of a typical file's compile time here (e.g.
# gen/generators.cpp: 0.6 s of 2.2 s is -fsyntax-only), and the project
# compiles ~330 files in each of CI's three builds (Release, asan, fuzz smoke).
#
# Two donors, because a precompiled header is only valid for files compiled
# with the same flags:
#  - attncheck_lib precompiles ATTNCHECK_PCH_STD for its own files (-fPIC);
#  - attncheck_test_pch precompiles ATTNCHECK_PCH_STD plus <gtest/gtest.h>, and
#    every test executable that links attncheck_lib and GoogleTest reuses it
#    (REUSE_FROM: one .gch for ~40 targets; one per target would cost more to
#    build than most single-file test targets save).
# Targets that link libtorch or Python are left alone: their headers' macros
# (e.g. _GLIBCXX_USE_CXX11_ABI) would make the shared header invalid for them.
#
# Measured (bench-free: two configurations of one checkout, cmake --build of the
# target on a 2-core machine, user + sys CPU): attncheck_lib 302 s without,
# 218 s with; attncheck_core_tests, _casefile_test, _cli_tests and _properties
# together 156 s without, 122 s with.
#
# The price: a file that forgets to include a standard header still compiles
# where the PCH is on. ATTNCHECK_PCH=OFF (.ci/nightly's sanitizer build) compiles
# every file on its own includes.
#
# Example usage (top-level CMakeLists.txt, after every add_subdirectory):
#   attncheck_pch_all_targets(${PROJECT_SOURCE_DIR})
include_guard(GLOBAL)

option(ATTNCHECK_PCH "Precompile the common standard and GoogleTest headers" ON)

# The standard headers included by at least ~15 of the project's files (counted
# over src/, tests/, properties/ and fuzz/ when this list was written).
set(ATTNCHECK_PCH_STD
  <algorithm> <array> <bit> <chrono> <cmath> <cstddef> <cstdint> <cstdio> <cstdlib> <cstring>
  <fstream> <functional> <limits> <memory> <optional> <random> <sstream> <string> <string_view>
  <type_traits> <utility> <vector>)

# Does target t link GoogleTest (directly)? Test executables do; nothing else should reuse its PCH.
function(_attncheck_links_gtest t out)
  get_target_property(libs ${t} LINK_LIBRARIES)
  set(${out} FALSE PARENT_SCOPE)
  if(libs AND "${libs}" MATCHES "GTest::|gtest" AND "${libs}" MATCHES "attncheck_lib|attncheck::attncheck"
     AND NOT "${libs}" MATCHES "torch|Python")
    set(${out} TRUE PARENT_SCOPE)
  endif()
endfunction()

# Calls fn(target) for every executable under dir that links GoogleTest and the library.
function(attncheck_foreach_test_executable dir fn)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    if(NOT type STREQUAL "EXECUTABLE")
      continue()
    endif()
    _attncheck_links_gtest(${t} gtest_test)
    if(gtest_test)
      cmake_language(CALL ${fn} ${t})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    attncheck_foreach_test_executable(${sub} ${fn})
  endforeach()
endfunction()

function(_attncheck_reuse_test_pch t)
  target_precompile_headers(${t} REUSE_FROM attncheck_test_pch)
endfunction()

function(attncheck_pch_all_targets dir)
  if(NOT ATTNCHECK_PCH)
    return()
  endif()
  target_precompile_headers(attncheck_lib PRIVATE ${ATTNCHECK_PCH_STD})
  if(TARGET GTest::gtest)
    # The donor: compiled with exactly the flags of a test executable (it links
    # what they link), so its .gch is valid for all of them.
    add_library(attncheck_test_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch_donor.cpp)
    target_link_libraries(attncheck_test_pch PRIVATE attncheck_lib GTest::gtest)
    target_precompile_headers(attncheck_test_pch PRIVATE ${ATTNCHECK_PCH_STD} <gtest/gtest.h>)
    attncheck_foreach_test_executable(${dir} _attncheck_reuse_test_pch)
  endif()
endfunction()
