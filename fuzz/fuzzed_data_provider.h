// FuzzedDataProvider comes with clang (<fuzzer/FuzzedDataProvider.h>); GCC
// builds reach it through the include directory cmake/AttncheckFuzz.cmake finds
// (the folder that holds the header itself), so no copy lives in this repository.
#pragma once

#if __has_include(<fuzzer/FuzzedDataProvider.h>)
#include <fuzzer/FuzzedDataProvider.h>
#else
#include <FuzzedDataProvider.h>
#endif
