# Run as a script (cmake -DIN=file.lua -DOUT=file.cpp -DNAME=identifier -P EmbedLua.cmake): writes a C++ source that
# defines redlock::detail::lua::NAME as the file's text, byte for byte.
file(READ "${IN}" text)
string(FIND "${text}" ")lua\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains ')lua\"', which would end the raw string literal it is embedded in")
endif()
file(WRITE "${OUT}.tmp" "// Generated from ${IN} by cmake/EmbedLua.cmake: edit the .lua file, not this.\n"
  "#include <string_view>\n\nnamespace redlock::detail::lua {\nextern const std::string_view ${NAME};\n"
  "const std::string_view ${NAME} = R\"lua(${text})lua\";\n}  // namespace redlock::detail::lua\n")
# Only a changed text touches the output: an unchanged script rebuilds nothing.
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
