# ATTNCHECK_SANITIZE=address,undefined (the asan preset) instruments everything.
include_guard(GLOBAL)
set(ATTNCHECK_SANITIZE "" CACHE STRING "Comma-separated -fsanitize= list for the whole build")
if(ATTNCHECK_SANITIZE)
  add_compile_options(-fsanitize=${ATTNCHECK_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=${ATTNCHECK_SANITIZE})
endif()
