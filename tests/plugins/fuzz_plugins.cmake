# Issue #33, fuzzing at kernel shapes: a kernel correct except on its head_dim-128
# fast path, which fuzz_plugin finds with a profile of check's and not with its
# default caps (fuzz/profile_shapes_test.py, registered in fuzz/CMakeLists.txt).
attncheck_test_plugin(attncheck_test_fast128_tail_plugin fast128_tail_plugin fast128_tail_plugin.c 11 NONE)
