# Turns a file into a C array, at build time (cmake -P): the OpenCode plugin
# that `vigil setup opencode` writes out (plugins/harness/opencode.js) is
# compiled into the vigil binary, so an installed vigil needs no data file
# to set a harness up.
#
#   cmake -DINPUT=file -DOUTPUT=file.c -DNAME=symbol -P embed.cmake
#
# gives `const unsigned char NAME[]` (the bytes and a NUL after them) and
# `const size_t NAME_len` (the bytes without the NUL).
file(READ ${INPUT} hex HEX)
string(LENGTH "${hex}" hexlen)
math(EXPR len "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){16})" "\\1\n  " bytes "${bytes}")
file(WRITE ${OUTPUT}
  "/* Generated from ${INPUT} by cmake/embed.cmake: do not edit. */\n"
  "#include <stddef.h>\n\n"
  "const unsigned char ${NAME}[] = {\n  ${bytes}0x00\n};\n"
  "const size_t ${NAME}_len = ${len};\n")
