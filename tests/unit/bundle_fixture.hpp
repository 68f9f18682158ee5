#pragma once
// The bundle tests' store, shared by tests/unit/test_bundle.cpp and
// fuzz/make_seeds.cpp (which writes fuzz seeds from it), so that the seeds are
// bundles of the shape the tests check. Plain C++ (no Catch2): errors throw.

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "recipes/lock.hpp"

namespace gb::mirror {
class Store;
}

namespace gbtest {

// Three images and the chart (gpu-operator v24.9.2, bytes "chart bytes"):
//   driver             OCI index: amd64 child over layers base + big; arm64
//                      child listed but not in the store (a sparse index)
//   k8s-device-plugin  Docker schema2 manifest sharing layer base
//   nfd                OCI manifest over an uncompressed (zstd-worthy) layer
// Layers are pseudo-random bytes of the given sizes, deterministic; tarlayer
// is `tar_fill` bytes of 'a' plus 1 KiB of them.
struct BundleStore {
  gb::recipes::Lock lock;  // the three images with their digests, sorted by source
  std::string base, big, tarlayer;
  std::string man_a, index_a, man_b, man_c;
};
BundleStore fill_bundle_store(gb::mirror::Store& store, std::size_t base_bytes, std::size_t big_bytes, std::size_t tar_fill);

std::string pseudo_random(std::size_t n, unsigned seed);

// A tar entry as the bundle tests and seeds copy and edit them.
inline constexpr int k_tar_file = 0100000;  // AE_IFREG, without libarchive's header
struct TarEntry {
  std::string path;
  std::string data;
  int type = k_tar_file;  // or AE_IFLNK, AE_IFDIR, ...
  std::string link;       // for a symlink
};
std::vector<TarEntry> read_tar(const std::filesystem::path& p);
void write_tar(const std::filesystem::path& p, const std::vector<TarEntry>& entries);  // pax, mode 0644

}  // namespace gbtest
