# Writes OUTPUT, a C++ file defining `const std::string& FUNCTION()` that returns the text of
# INPUT (namespace NAMESPACE). Run by add_custom_command with -D for each variable.
file(READ ${INPUT} text)
set(delim "onset_embedded")
string(FIND "${text}" ")${delim}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter )${delim}\"")
endif()
file(WRITE ${OUTPUT} "// Generated from ${INPUT}; do not edit.\n#include <string>\n\nnamespace ${NAMESPACE} {\n\nconst std::string& ${FUNCTION}() {\n  static const std::string text = R\"${delim}(${text})${delim}\";\n  return text;\n}\n\n}  // namespace ${NAMESPACE}\n")
