#!/usr/bin/env bash
# Regenerates the seeds that come from built artifacts; the hand-written ones
# (references, headers, registry configs, auth files) and the copies of
# examples/*.yaml and docs/lock.md's example are committed as they are.
#   fuzz/make-corpus.sh BUILD_FUZZ_DIR
# - bundle, bundle_manifest, oci_manifest, lock: from make_seeds (a tiny
#   store, a one-volume and a two-volume bundle);
# - makeself_header, installer_manifest: the stand-in NVIDIA installer of
#   tests/integration/fixtures/make-installer.sh (header bytes only).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: fuzz/make-corpus.sh BUILD_FUZZ_DIR}
corpus=fuzz/corpus

"$build/fuzz/make_seeds" "$corpus"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run=$(bash tests/integration/fixtures/make-installer.sh "$work" 580.95.05)
cp "$work/tree/.manifest" "$corpus/installer_manifest/stand-in.manifest"
# A header and the payload's first bytes are all the parser reads.
for f in "$run" "${run%.run}-nv.run"; do
  skip=$(sed -n 's/^skip="\{0,1\}\([0-9]*\)"\{0,1\}$/\1/p' "$f" | head -n1)
  bytes=$(head -n "$skip" "$f" | wc -c)
  head -c "$((bytes + 64))" "$f" > "$corpus/makeself_header/$(basename "$f" .run)"
done
du -sh "$corpus"/*
