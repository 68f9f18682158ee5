#pragma once
// The node_facts target's input: the files of a node's root (node/facts.cpp
// reads them), one part each in this order, joined by a marker line. Absent
// parts leave their files absent. <kver> is the first line of the kernel
// release part when that is one plain file name, else "unsafe-kver": the
// target writes below its root only, whatever the input says. The /dev part
// is a list of names, one a line, each made an empty file under dev/.
#include <array>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace gbfuzz {

inline constexpr std::string_view k_node_file_marker = "\n--gpubundle-fuzz-next-file--\n";

inline constexpr std::array<const char*, 10> k_node_files = {
    "etc/os-release",
    "proc/sys/kernel/osrelease",
    "proc/sys/kernel/arch",
    "proc/driver/nvidia/version",
    "sys/module/nvidia/version",
    "sys/bus/pci/devices/0000:3b:00.0/vendor",
    "sys/bus/pci/devices/0000:3b:00.0/class",
    "sys/bus/pci/devices/0000:3b:00.0/device",
    "lib/modules/<kver>/updates/dkms/nvidia.ko",
    "proc/1/comm",
};

// A name that stays one entry of its folder.
inline bool plain_name(std::string_view s) {
  return !s.empty() && s.size() < 200 && s != "." && s != ".." && s.find_first_of(std::string_view("/\0", 2)) == std::string_view::npos;
}

inline void write_node_files(const std::filesystem::path& root, std::string_view in) {
  auto put = [](const std::filesystem::path& p, std::string_view bytes) {
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  };
  std::string kver = "unsafe-kver";
  for (std::size_t n = 0;; ++n) {
    auto at = in.find(k_node_file_marker);
    std::string_view part = in.substr(0, at);
    if (n < k_node_files.size()) {
      std::string rel = k_node_files[n];
      if (n == 1) {
        std::string_view line = part.substr(0, part.find('\n'));
        while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.remove_suffix(1);
        while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
        if (plain_name(line)) kver = line;
      }
      if (auto k = rel.find("<kver>"); k != std::string::npos) rel.replace(k, 6, kver);
      put(root / rel, part);
    } else if (n == k_node_files.size()) {
      std::filesystem::create_directories(root / "dev");
      for (std::size_t pos = 0, lines = 0; pos <= part.size() && lines < 16; ++lines) {
        std::size_t end = std::min(part.find('\n', pos), part.size());
        std::string_view name = part.substr(pos, end - pos);
        if (plain_name(name)) put(root / "dev" / std::string(name), "");
        pos = end + 1;
      }
    }
    if (at == std::string_view::npos) return;
    in.remove_prefix(at + k_node_file_marker.size());
  }
}

}  // namespace gbfuzz
