# Warnings on every target the project defines, the way fmt does it: one
# function applied to each compiled target after the tree is read, so a target
# added anywhere later cannot miss them.
#
# Example usage (top-level CMakeLists.txt, after every add_subdirectory):
#   attncheck_warn_all_targets(${PROJECT_SOURCE_DIR})
include_guard(GLOBAL)

set(ATTNCHECK_WARNINGS -Wall -Wextra)

function(attncheck_warn_all_targets dir)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    get_target_property(imported ${t} IMPORTED)
    if(imported OR type STREQUAL "INTERFACE_LIBRARY" OR type STREQUAL "UTILITY")
      continue()
    endif()
    if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
      target_compile_options(${t} PRIVATE ${ATTNCHECK_WARNINGS})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    attncheck_warn_all_targets(${sub})
  endforeach()
endfunction()
