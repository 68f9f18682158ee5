// Packages we did not make (node-images/unpack.hpp): the input as an rpm's
// cpio payload and as a .deb. Whatever it holds, every link left in the
// folder must resolve inside it, and nothing may appear beside it.
#include <cstdlib>
#include <filesystem>

#include "fuzz/fuzz_input.hpp"
#include "node-images/unpack.hpp"

namespace fs = std::filesystem;

namespace {

void check_inside(const fs::path& root) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_symlink(ec)) continue;
    fs::path target = fs::read_symlink(it->path(), ec);
    if (target.is_absolute()) std::abort();
    auto rel = (it->path().parent_path() / target).lexically_normal().lexically_relative(root);
    if (rel.empty() || *rel.begin() == "..") std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fs::path box = gbfuzz::scratch_dir() / "box";
  const fs::path out = box / "out";
  gb::node_images::UnpackLimits limits;
  limits.max_bytes = 64 << 20;
  limits.max_entries = 10000;
  for (const char* name : {"p.rpm", "p.deb"}) {
    std::error_code ec;
    fs::remove_all(box, ec);
    fs::create_directories(box, ec);
    auto file = gbfuzz::scratch_file(name, gbfuzz::text(data, size));
    auto r = name[2] == 'r' ? gb::node_images::unpack_rpm(file, out, limits) : gb::node_images::unpack_deb(file, out, limits);
    (void)r;
    if (fs::exists(out, ec)) check_inside(fs::canonical(out, ec));
    // Only the output folder may appear in the box.
    for (const auto& e : fs::directory_iterator(box, ec))
      if (e.path().filename() != "out") std::abort();
  }
  return 0;
}
