# Fails when a source file under DIR includes a header of the folder FORBIDDEN
# (`#include "FORBIDDEN/..."`), except the headers listed in ALLOW (a ;-list of
# paths as written in the include). Used for the property tests, which sit
# outside src/ and must include nothing of the command line either.
#
# Example usage (CTest):
#   cmake -DDIR=properties -DFORBIDDEN=cli -P no_includes_of.cmake
# (src/ is checked as a whole against docs/architecture.md by tests/layers.)
cmake_minimum_required(VERSION 3.20)
file(GLOB_RECURSE sources "${DIR}/*.cpp" "${DIR}/*.h")
if(NOT sources)
  message(FATAL_ERROR "${DIR}: no sources found (a wrong path would make this check pass on nothing)")
endif()
set(found "")
foreach(f IN LISTS sources)
  file(STRINGS "${f}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]${FORBIDDEN}/")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[\"<]([^\">]*)[\">].*$" "\\1" header "${line}")
    if(NOT header IN_LIST ALLOW)
      string(APPEND found "\n  ${f}: #include \"${header}\"")
    endif()
  endforeach()
endforeach()
if(found)
  message(FATAL_ERROR "${DIR} includes ${FORBIDDEN}/ (docs/architecture.md: the layers):${found}")
endif()
list(LENGTH sources n)
message(STATUS "${DIR}: ${n} files, none includes ${FORBIDDEN}/")
