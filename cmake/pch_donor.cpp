// The translation unit that compiles attncheck_test_pch's precompiled header
// (cmake/AttncheckPch.cmake); it defines nothing.
