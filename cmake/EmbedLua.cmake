# Run as a script: cmake -DIN=<script.lua> -DSRC=<src dir> -DFINAL=<final script> -DOUT=<source.cpp> -DNAME=<id>
#   -P EmbedLua.cmake
# Expands the script's includes (lines `-- #include "<path under src/>.lib.lua"`: files of local functions only),
# writes the final script to FINAL (what the server runs, to read) and a C++ source defining
# redlock::detail::lua::NAME as its text.
cmake_minimum_required(VERSION 3.21)
file(READ "${IN}" text)
# A directive is a line of its own: "\n" before it (a script begins with its contract, never with one).
set(directive "\n-- #include \"([^\"]+\\.lib\\.lua)\"\n")
set(expanded 0)
while(TRUE)
  string(REGEX MATCH "${directive}" include "${text}")
  if(NOT include)
    break()
  endif()
  string(REGEX REPLACE "${directive}" "\\1" path "${include}")
  if(NOT EXISTS "${SRC}/${path}")
    message(FATAL_ERROR "${IN} includes ${path}, which is no file of ${SRC}")
  endif()
  file(READ "${SRC}/${path}" library)
  string(REPLACE "${include}" "\n${library}" text "${text}")
  math(EXPR expanded "${expanded} + 1")
  if(expanded GREATER 20)
    message(FATAL_ERROR "${IN}: more than 20 includes (does a library include itself?)")
  endif()
endwhile()
string(REGEX MATCH "\n-- #include [^\n]*" left "${text}")
if(left)
  message(FATAL_ERROR "${IN}: '${left}' is no include of a .lib.lua file")
endif()
string(FIND "${text}" ")lua\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains ')lua\"', which would end the raw string literal it is embedded in")
endif()
# Only a changed text touches the outputs: an unchanged script rebuilds nothing.
file(WRITE "${FINAL}.tmp" "${text}")
file(COPY_FILE "${FINAL}.tmp" "${FINAL}" ONLY_IF_DIFFERENT)
file(REMOVE "${FINAL}.tmp")
file(WRITE "${OUT}.tmp" "// Generated from ${IN} by cmake/EmbedLua.cmake: edit the .lua file, not this.\n"
  "#include <string_view>\n\nnamespace redlock::detail::lua {\nextern const std::string_view ${NAME};\n"
  "const std::string_view ${NAME} = R\"lua(${text})lua\";\n}  // namespace redlock::detail::lua\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
