# Writes OUTPUT: a C++ file defining gb::recipes::embedded_catalog(), which returns the
# catalog YAML files (INPUTS) by file name. Keeps the binary self-contained.
set(body "#include <map>\n#include <string>\nnamespace gb::recipes {\nconst std::map<std::string, std::string>& embedded_catalog() {\n  static const std::map<std::string, std::string> files = {\n")
foreach(f IN LISTS INPUTS)
  file(READ "${f}" content)
  get_filename_component(name "${f}" NAME)
  string(APPEND body "    {\"${name}\", R\"gbcatalog(${content})gbcatalog\"},\n")
endforeach()
string(APPEND body "  };\n  return files;\n}\n}  // namespace gb::recipes\n")
file(WRITE "${OUTPUT}.new" "${body}")
file(COPY_FILE "${OUTPUT}.new" "${OUTPUT}" ONLY_IF_DIFFERENT)
