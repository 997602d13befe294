# embed_object.cmake -- cmake -DIN=obj -DOUT=header -DNAME=sym -P embed_object.cmake
# Writes a C header holding file IN as `static const unsigned char NAME[]`:
# a kernel LFTA's BPF object, compiled into its LFTA's unit so that the
# query library carries its program (sizeof NAME is its length).
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
if(n EQUAL 0)
  message(FATAL_ERROR "${IN} is empty")
endif()
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n    " bytes "${bytes}")
file(WRITE "${OUT}" "/* generated from ${IN}: do not edit */\nstatic const unsigned char ${NAME}[] = {\n    ${bytes}\n};\n")
