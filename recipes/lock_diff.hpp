#pragma once
// What changes between two locks (`gpubundle diff OLD NEW`), for review in a
// pull request: operator and chart, driver, target, each component's image
// tags, images added, removed or changed, and the bytes a site must receive.
//
// Images are matched by source reference first (same reference, other digest:
// changed); of those left, one old and one new image of the same repository
// pair up (a new tag: changed); everything else is added or removed.
//
// Bytes to ship are the distinct blobs (manifests, configs, layers) of the
// images the new lock needs that the old one does not (added and changed),
// less the blobs of the old lock's images, which the site already has. Sizes
// come from the caller's ImageBlobs (the content store in `gpubundle diff
// --store`); an image it cannot size is listed as unknown, never guessed.
//
// The --json form (lock_diff_json), sorted keys, two-space indent:
//   { "schemaVersion": 1,
//     "old": {file, recipe, operator}, "new": {file, recipe, operator},
//     "differs": bool,
//     "fields": { "<field>": {old, new} },   // changed scalars: strings (usePrecompiled: bool)
//                                            // changed lists: {old[], new[], added[], removed[]}
//     "components": { "<component>": {old: [refs], new: [refs]} },  // only changed ones
//     "images": { "added":   [{source, digest, components[]}],
//                 "removed": [{source, digest, components[]}],
//                 "changed": [{repository, components[], old: {source, digest}, new: {source, digest}}] },
//     "ship": { "sizedBy": "" | what sized them (e.g. "store DIR"),
//               "bytes": N | null,          // null: no image could be sized
//               "complete": bool,           // every image to ship was sized
//               "images": [{source, bytes: N | null}],   // its blobs not in the old lock
//               "oldUnsized": N } }         // old images not sized (their blobs may count)
// Fields, in this order: operator.version, chart.name, chart.version,
// chart.appVersion, chart.sha256, driver.mode, driver.version, driver.branch,
// driver.kernelModuleType, driver.usePrecompiled, target.gpus, target.os,
// target.osTag, target.kernels, target.platforms, target.workloads,
// packageRepo.format, packageRepo.fingerprint.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "recipes/lock.hpp"

namespace gb::recipes {

struct FieldChange {
  std::string field;  // "driver.version"
  bool list = false;  // target.kernels etc.: compared as sets
  std::vector<std::string> old_values, new_values;  // one entry for a scalar
};

struct ComponentChange {
  std::string component;
  std::vector<std::string> old_refs, new_refs;  // the component's image sources, sorted
};

struct ImageChange {
  std::string repository;  // registry/repository, no tag
  std::vector<std::string> components;
  std::string old_source, old_digest, new_source, new_digest;
};

// One image to ship: bytes of its blobs the old lock lacks, when known.
struct ShipImage {
  std::string source;
  std::optional<std::uint64_t> bytes;
};

struct ShipBytes {
  std::string sized_by;  // "" when nothing sized the images
  std::uint64_t bytes = 0;
  bool any_sized = false;
  bool complete = false;
  std::vector<ShipImage> images;  // sorted by source
  std::size_t old_unsized = 0;
};

struct LockDiff {
  std::string old_file, new_file;
  std::vector<FieldChange> fields;
  std::vector<ComponentChange> components;  // sorted by component
  std::vector<LockImage> added, removed;    // sorted by source
  std::vector<ImageChange> changed;         // sorted by repository
  ShipBytes ship;

  bool differs() const { return !fields.empty() || !components.empty() || !added.empty() || !removed.empty() || !changed.empty(); }
};

// The blobs one lock image reaches, digest -> size; nullopt when unknown.
using ImageBlobs = std::function<std::optional<std::map<std::string, std::uint64_t>>(const LockImage&)>;

// sized_by says what `blobs` reads (for the text and JSON); without blobs
// every image to ship is unknown.
LockDiff diff_locks(const Lock& old_lock, const Lock& new_lock, const ImageBlobs& blobs = {}, const std::string& sized_by = "");

std::string lock_diff_text(const LockDiff& diff, const Lock& old_lock, const Lock& new_lock);
std::string lock_diff_json(const LockDiff& diff, const Lock& old_lock, const Lock& new_lock);

}  // namespace gb::recipes
