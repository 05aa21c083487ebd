# The test executables' own files compile at ATTNCHECK_TEST_OPTIMIZE (-O1) in an optimised
# build (Release, MinSizeRel), where the build type says -O3: what they test, the library,
# keeps the build type's flags, and the tests' files are mostly GoogleTest and RapidCheck
# macros, which -O3 spends its time on for nothing. Measured on one file
# (tests/core/accuracy_grade_test.cpp, g++ 12, user CPU): 13.8 s at -O3, 8.4 s at -O1; the
# tests' files are about half of the Release build's compile time, which CI pays on every
# commit. Sanitizer (RelWithDebInfo, -O1) and Debug builds are left as they are.
# ATTNCHECK_TEST_OPTIMIZE="" gives the tests the build type's flags.
#
# Example usage (top-level CMakeLists.txt, after every add_subdirectory):
#   attncheck_test_flags_all_targets(${PROJECT_SOURCE_DIR})
include_guard(GLOBAL)
include(AttncheckPch)  # attncheck_foreach_test_executable

set(ATTNCHECK_TEST_OPTIMIZE "-O1" CACHE STRING
    "Optimisation of the test executables' own files in Release builds (empty: the build type's)")

# Applies ATTNCHECK_TEST_OPTIMIZE to one target's files (the flag comes after the build type's,
# so it wins). The test PCH's donor gets it too: a precompiled header is only used by files
# compiled with its flags.
function(attncheck_test_optimize t)
  if(ATTNCHECK_TEST_OPTIMIZE)
    target_compile_options(${t} PRIVATE $<$<CONFIG:Release,MinSizeRel>:${ATTNCHECK_TEST_OPTIMIZE}>)
  endif()
endfunction()

function(attncheck_test_flags_all_targets dir)
  attncheck_foreach_test_executable(${dir} attncheck_test_optimize)
  if(TARGET attncheck_test_pch)
    attncheck_test_optimize(attncheck_test_pch)
  endif()
endfunction()
