# Compiler flags shared by the runtime archive and generated query sets:
# warnings (errors with GSQLC_WERROR) and the sanitizers (GSQLC_SANITIZE);
# and the runtime's layout (README.md), shared by the same two builds.
option(GSQLC_WERROR "treat warnings as errors" OFF)
option(GSQLC_SANITIZE "build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)

# The options themselves, as lists: gsqlc_target_flags gives them to a
# target, gsqlc_write_toolchain to gsqlc's own driver of the compiler.
set(GSQLC_COMPILE_OPTIONS -Wall -Wextra)
set(GSQLC_LINK_OPTIONS "")
# C++ units (the HFTA operators, each specialised by its query's functor)
# at -O1 rather than the Release -O3: a query set's cold compile is mostly
# theirs.  Measured on an AVX2 VM (2026-11-29): the build step of
# bench/queries/compile_set.gsql 1.74-1.96 s at -O2, 1.43-1.52 s at -O1
# (4 interleaved rounds), with no loss beyond noise on Q2 over Arrow
# (65,536 and 524,288 groups) or on that set's HFTA aggregation, merge and
# join over 20 M packets (-O3 had already been 30 % slower to compile than
# -O2 for no gain).  Given before GSQLC_COMPILE_OPTIONS, so that a
# sanitized build's -O1 still wins.
set(GSQLC_CXX_OPTIONS -O1)
if(GSQLC_WERROR)
  list(APPEND GSQLC_COMPILE_OPTIONS -Werror)
endif()
if(GSQLC_SANITIZE)
  list(APPEND GSQLC_COMPILE_OPTIONS -fsanitize=address,undefined
    -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1)
  list(APPEND GSQLC_LINK_OPTIONS -fsanitize=address,undefined)
endif()

function(gsqlc_target_flags target)
  target_compile_options(${target} PRIVATE
    "$<$<COMPILE_LANGUAGE:CXX>:${GSQLC_CXX_OPTIONS}>" ${GSQLC_COMPILE_OPTIONS})
  if(GSQLC_LINK_OPTIONS)
    target_link_options(${target} PRIVATE ${GSQLC_LINK_OPTIONS})
  endif()
endfunction()

# What gsqlc needs to compile a generated query set without CMake
# (compiler/gsqlc/backend/native_build.py) with the toolchain found here:
# one NAME=VALUE line each, list items separated by ';'.  The build type's
# flags are the Release ones, as generated query sets ask for.
function(gsqlc_write_toolchain path)
  separate_arguments(c_flags UNIX_COMMAND "${CMAKE_C_FLAGS} ${CMAKE_C_FLAGS_RELEASE}")
  separate_arguments(cxx_flags UNIX_COMMAND "${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_RELEASE}")
  separate_arguments(shared_link UNIX_COMMAND
    "${CMAKE_SHARED_LINKER_FLAGS} ${CMAKE_SHARED_LINKER_FLAGS_RELEASE}")
  separate_arguments(exe_link UNIX_COMMAND
    "${CMAKE_EXE_LINKER_FLAGS} ${CMAKE_EXE_LINKER_FLAGS_RELEASE}")
  file(WRITE "${path}"
    "c_compiler=${CMAKE_C_COMPILER}\n"
    "cxx_compiler=${CMAKE_CXX_COMPILER}\n"
    "c_flags=${c_flags}\n"
    "cxx_flags=${cxx_flags}\n"
    "c_standard=${CMAKE_C11_STANDARD_COMPILE_OPTION}\n"
    "cxx_standard=${CMAKE_CXX17_STANDARD_COMPILE_OPTION}\n"
    "shared_linker_flags=${shared_link}\n"
    "exe_linker_flags=${exe_link}\n"
    "cxx_options=${GSQLC_CXX_OPTIONS}\n"
    "compile_options=${GSQLC_COMPILE_OPTIONS}\n"
    "link_options=${GSQLC_LINK_OPTIONS}\n"
    "pcap_include_dir=${PCAP_INCLUDE_DIR}\n"
    "pcap_library=${PCAP_LIBRARY}\n")
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
