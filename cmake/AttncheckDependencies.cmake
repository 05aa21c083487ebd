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
