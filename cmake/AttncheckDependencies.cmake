# Every dependency comes from a Debian package. When one is missing,
# configuration stops and names the package to install.
include_guard(GLOBAL)

function(attncheck_require package target apt)
  find_package(${package} ${ARGN} QUIET)
  if(NOT ${package}_FOUND AND NOT TARGET ${target})
    message(FATAL_ERROR "attncheck needs ${package} (CMake target ${target}). Install it with:\n"
                        "  sudo apt-get install -y ${apt}")
  endif()
endfunction()

attncheck_require(Eigen3 Eigen3::Eigen libeigen3-dev 3.3)
attncheck_require(nlohmann_json nlohmann_json::nlohmann_json nlohmann-json3-dev)
attncheck_require(CLI11 CLI11::CLI11 libcli11-dev)
attncheck_require(rapidcheck rapidcheck librapidcheck-dev)
find_package(Threads REQUIRED)

# libquadmath (GCC's __float128 functions; the tests' long references). Its
# header lives in GCC's own include folder, which clang (the asan preset) does
# not search: attncheck_quadmath adds it there with -idirafter, i.e. after
# clang's own headers, so only quadmath.h is taken from GCC's folder.
add_library(attncheck_quadmath INTERFACE)
target_link_libraries(attncheck_quadmath INTERFACE quadmath)
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  file(GLOB _attncheck_gcc_includes LIST_DIRECTORIES true /usr/lib/gcc/*/*/include)
  find_path(ATTNCHECK_QUADMATH_INCLUDE_DIR quadmath.h HINTS ${_attncheck_gcc_includes} NO_DEFAULT_PATH
            DOC "GCC's include folder holding quadmath.h, for clang builds of the tests")
  if(ATTNCHECK_QUADMATH_INCLUDE_DIR)
    target_compile_options(attncheck_quadmath INTERFACE "SHELL:-idirafter ${ATTNCHECK_QUADMATH_INCLUDE_DIR}")
  endif()
endif()
