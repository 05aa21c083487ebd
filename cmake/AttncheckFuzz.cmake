# Fuzz targets: attncheck_add_fuzzer(name sources...) builds one target three ways.
#   - $LIB_FUZZING_ENGINE set (ClusterFuzzLite / OSS-Fuzz, or ATTNCHECK_LIB_FUZZING_ENGINE given):
#     linked with it; the build's CFLAGS/CXXFLAGS already carry the instrumentation.
#   - ATTNCHECK_FUZZ_ENGINE=libfuzzer (the fuzz preset, clang): linked with -fsanitize=fuzzer;
#     attncheck_fuzz_instrument(attncheck_lib) compiles the library with
#     -fsanitize=fuzzer-no-link so coverage reaches into the code under test.
#   - otherwise (GCC, the default preset): linked with fuzz/replay_main.cpp, a plain main
#     that runs every file and folder given, so seeds and saved inputs run under CTest,
#     gdb and valgrind without libFuzzer.
#
# Example usage (fuzz/CMakeLists.txt):
#   attncheck_add_fuzzer(fuzz_overflow fuzz_overflow.cpp)
#   attncheck_add_fuzz_smoke_test(fuzz_overflow)   # CTest over fuzz/corpus/fuzz_overflow, label fuzz-smoke
include_guard(GLOBAL)

set(ATTNCHECK_FUZZ_ENGINE "" CACHE STRING
    "libfuzzer: link fuzz targets with -fsanitize=fuzzer (clang); empty: link them with a replay main")
set(ATTNCHECK_LIB_FUZZING_ENGINE "$ENV{LIB_FUZZING_ENGINE}" CACHE STRING
    "Link flags or library of an external fuzzing engine (OSS-Fuzz's $LIB_FUZZING_ENGINE); overrides ATTNCHECK_FUZZ_ENGINE")

set(_attncheck_fuzz_dir "${CMAKE_CURRENT_LIST_DIR}/../fuzz")
cmake_path(NORMAL_PATH _attncheck_fuzz_dir)

# How the fuzz targets are driven in this build: "external", "libfuzzer" or "replay".
if(ATTNCHECK_LIB_FUZZING_ENGINE)
  set(ATTNCHECK_FUZZ_DRIVER external)
elseif(ATTNCHECK_FUZZ_ENGINE STREQUAL "libfuzzer")
  set(ATTNCHECK_FUZZ_DRIVER libfuzzer)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "ATTNCHECK_FUZZ_ENGINE=libfuzzer needs clang (got ${CMAKE_CXX_COMPILER_ID}); "
                        "use the fuzz preset: cmake --preset fuzz")
  endif()
else()
  set(ATTNCHECK_FUZZ_DRIVER replay)
endif()

# FuzzedDataProvider.h ships with clang; a GCC build finds the folder that holds it
# (fuzz/fuzzed_data_provider.h includes it by its bare name then).
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  file(GLOB _attncheck_fdp_hints LIST_DIRECTORIES true
       /usr/lib/llvm-*/lib/clang/*/include/fuzzer /usr/local/lib/clang/*/include/fuzzer /usr/lib/clang/*/include/fuzzer)
  find_path(ATTNCHECK_FDP_DIR FuzzedDataProvider.h HINTS ${_attncheck_fdp_hints}
            DOC "Folder holding FuzzedDataProvider.h (from clang) for GCC builds of the fuzz targets")
endif()

# Whether the fuzz targets can be built here at all (GCC without any clang installed cannot).
function(attncheck_fuzz_supported out)
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang" OR ATTNCHECK_FDP_DIR)
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# How much coverage instrumentation the libraries under test get when libFuzzer drives this
# build (the fuzz targets' own files always get -fsanitize=fuzzer's):
#   full   -fsanitize=fuzzer-no-link: edge counters, the PC table, indirect calls and every
#          comparison's operands (trace-cmp, libFuzzer's value profile): the fuzz preset, the
#          overnight runs.
#   light  edge counters and the PC table only. libFuzzer still sees which edges an input
#          reaches, but not how close a comparison came. The asan-clang preset (CI): the same
#          library runs the whole test suite, and trace-cmp's call on every comparison made
#          those tests take 39 % more CPU (cli_seed-layer, cli_example-plugin and
#          BatchComposition.OnlyThisLawCatchesBatchGroupKvStale: 106 s against 65 s of user
#          time); the smoke runs each target for seconds, where edge coverage is what counts.
set(ATTNCHECK_FUZZ_COVERAGE "full" CACHE STRING
    "Coverage instrumentation of the library when ATTNCHECK_FUZZ_ENGINE=libfuzzer: full or light")
set_property(CACHE ATTNCHECK_FUZZ_COVERAGE PROPERTY STRINGS full light)
if(NOT ATTNCHECK_FUZZ_COVERAGE MATCHES "^(full|light)$")
  message(FATAL_ERROR "ATTNCHECK_FUZZ_COVERAGE is '${ATTNCHECK_FUZZ_COVERAGE}': use full or light")
endif()

# Instruments a library for coverage when libFuzzer drives this build.
function(attncheck_fuzz_instrument target)
  if(ATTNCHECK_FUZZ_DRIVER STREQUAL "libfuzzer")
    if(ATTNCHECK_FUZZ_COVERAGE STREQUAL "light")
      target_compile_options(${target} PRIVATE -fsanitize-coverage=inline-8bit-counters,pc-table)
    else()
      target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
    endif()
  endif()
endfunction()

# Applies the build's engine to a target that defines LLVMFuzzerTestOneInput.
function(attncheck_fuzz_link target)
  if(ATTNCHECK_FUZZ_DRIVER STREQUAL "external")
    separate_arguments(_engine UNIX_COMMAND "${ATTNCHECK_LIB_FUZZING_ENGINE}")
    target_link_libraries(${target} PRIVATE ${_engine})
  elseif(ATTNCHECK_FUZZ_DRIVER STREQUAL "libfuzzer")
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer)
    target_link_options(${target} PRIVATE -fsanitize=fuzzer)
  else()
    target_sources(${target} PRIVATE ${_attncheck_fuzz_dir}/replay_main.cpp)
  endif()
  if(ATTNCHECK_FDP_DIR)
    target_include_directories(${target} PRIVATE ${ATTNCHECK_FDP_DIR})
  endif()
endfunction()

# attncheck_add_fuzzer(name sources...): an executable linking attncheck_fuzz_support
# (decoder, law sweep, findings; defined in fuzz/CMakeLists.txt) and the library.
function(attncheck_add_fuzzer name)
  add_executable(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE attncheck_fuzz_support attncheck::attncheck)
  attncheck_fuzz_link(${name})
endfunction()

# attncheck_add_fuzz_smoke_test(name [ENVIRONMENT var=value...]): runs the target over its
# seed corpus fuzz/corpus/<name> (the replay main, or libFuzzer with -runs=0, which
# also just executes every input). Label fuzz-smoke.
function(attncheck_add_fuzz_smoke_test name)
  cmake_parse_arguments(ARG "" "" "ENVIRONMENT" ${ARGN})
  set(corpus ${_attncheck_fuzz_dir}/corpus/${name})
  if(ATTNCHECK_FUZZ_DRIVER STREQUAL "replay")
    add_test(NAME ${name}_seeds COMMAND ${name} ${corpus})
  else()
    add_test(NAME ${name}_seeds COMMAND ${name} -runs=0 ${corpus})
  endif()
  # Every (implementation, law) pair on every seed: the seeds are few, so exhaustive is cheap.
  set(env "ATTNCHECK_REGRESSION_DIR=${CMAKE_CURRENT_BINARY_DIR}/regressions" ATTNCHECK_FUZZ_ALL=1 ${ARG_ENVIRONMENT})
  set_tests_properties(${name}_seeds PROPERTIES LABELS fuzz-smoke ENVIRONMENT "${env}")
endfunction()
