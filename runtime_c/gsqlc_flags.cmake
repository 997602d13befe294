# Compiler flags shared by the runtime archive and generated query sets:
# warnings (errors with GSQLC_WERROR) and the sanitizers (GSQLC_SANITIZE).
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
