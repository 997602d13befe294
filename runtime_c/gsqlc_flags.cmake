# Compiler flags shared by the runtime archive and generated query sets:
# warnings (errors with GSQLC_WERROR) and the sanitizers (GSQLC_SANITIZE);
# and the runtime's layout (README.md), shared by the same two builds.
option(GSQLC_WERROR "treat warnings as errors" OFF)
option(GSQLC_SANITIZE "build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)

function(gsqlc_target_flags target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(GSQLC_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(GSQLC_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined
      -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()

# The runtime under `root` (its runtime_c directory):
#   GSQLC_RUNTIME_INCLUDES  the headers generated code includes (include/, lfta/)
#   GSQLC_RUNTIME_PRIVATE_INCLUDES  those and the runtime's own directories
#   GSQLC_RUNTIME_SOURCES   the library's C files (tools/ is the runner's)
function(gsqlc_runtime_layout root)
  set(pub "${root}/include" "${root}/lfta")
  set(own "${root}/core" "${root}/sources" "${root}/sinks" "${root}/run")
  set(srcs "")
  foreach(d ${own})
    file(GLOB s "${d}/*.c")
    list(APPEND srcs ${s})
  endforeach()
  list(SORT srcs)
  set(GSQLC_RUNTIME_INCLUDES ${pub} PARENT_SCOPE)
  set(GSQLC_RUNTIME_PRIVATE_INCLUDES ${pub} ${own} PARENT_SCOPE)
  set(GSQLC_RUNTIME_SOURCES ${srcs} PARENT_SCOPE)
endfunction()
