# Writes OUTPUT: a C++ file defining gb::node_images::embedded_node_script(name), which
# returns the files in INPUTS (the nvidia-driver and install.sh scripts, the
# tool image's tool-image.packages) by file name.
set(body "#include <map>\n#include <stdexcept>\n#include <string>\nnamespace gb::node_images {\nconst std::string& embedded_node_script(const std::string& name) {\n  static const std::map<std::string, std::string> files = {\n")
foreach(f IN LISTS INPUTS)
  file(READ "${f}" content)
  get_filename_component(name "${f}" NAME)
  string(APPEND body "    {\"${name}\", R\"gbscript(${content})gbscript\"},\n")
endforeach()
string(APPEND body "  };\n  auto it = files.find(name);\n  if (it == files.end()) throw std::logic_error(\"no embedded script \" + name);\n  return it->second;\n}\n}  // namespace gb::node_images\n")
file(WRITE "${OUTPUT}.new" "${body}")
file(COPY_FILE "${OUTPUT}.new" "${OUTPUT}" ONLY_IF_DIFFERENT)
