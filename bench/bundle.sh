#!/usr/bin/env bash
# Bundle throughput against its peers, on one store, in one run (not a test).
#   bundle create   vs  tar -cf of the store folder + sync goal >= 0.8x its throughput
#   bundle create   vs  tar -cf - | zstd -T0 -3 + sync (Hauler) goal 1.5x (testing-notes)
#   bundle verify   vs  openssl dgst -sha256 of the bundle goal >= 1.5x, on every core
# plus peak RSS of create and verify. Usage: bench/bundle.sh [BUILD_DIR]
source "$(dirname "$0")/lib.sh" "$@"
store_bytes=$(du -sb "$W/store/blobs" | cut -f1)


cat "$W/store/blobs/sha256/"* > /dev/null  # warm the page cache for everyone
t_create=$(best "$GB" --store "$W/store" -q bundle create "$W/site.lock.json" -o "$W/b.bundle" --key "$W/k.key")
t_tar=$(best sh -c "tar -cf '$W/store.tar' -C '$W' store && sync '$W/store.tar'")  # a bundle is fsynced too
t_tarzstd=$(best sh -c "tar -cf - -C '$W' store | zstd -q -T0 -3 -o '$W/store.tar.zst' -f && sync '$W/store.tar.zst'")
t_verify=$(best "$GB" -q bundle verify "$W/b.bundle" --pubkey "$W/k.pub")
t_dgst=$(best openssl dgst -sha256 "$W/b.bundle")
rss_create=$(rss "$GB" --store "$W/store" -q bundle create "$W/site.lock.json" -o "$W/b.bundle" --key "$W/k.key")
rss_verify=$(rss "$GB" -q bundle verify "$W/b.bundle" --pubkey "$W/k.pub")
bundle_bytes=$(stat -c %s "$W/b.bundle")
tar_bytes=$(stat -c %s "$W/store.tar")
zst_bytes=$(stat -c %s "$W/store.tar.zst")

printf '\nstore: %s MiB of blobs, %s images\n' "$((store_bytes >> 20))" "$("$PY" -c 'import json,sys;print(len(json.load(open(sys.argv[1]))["images"]))' "$W/seed.json")"
printf '%-32s %8s s %8s MiB/s  %s bytes\n' "bundle create" "$t_create" "$(mbps "$bundle_bytes" "$t_create")" "$bundle_bytes"
printf '%-32s %8s s %8s MiB/s  %s bytes\n' "tar -cf (store folder) + sync" "$t_tar" "$(mbps "$tar_bytes" "$t_tar")" "$tar_bytes"
printf '%-32s %8s s %8s MiB/s  %s bytes\n' "tar | zstd -T0 -3 + sync" "$t_tarzstd" "$(mbps "$tar_bytes" "$t_tarzstd")" "$zst_bytes"
printf '%-32s %8s s %8s MiB/s\n' "bundle verify" "$t_verify" "$(mbps "$bundle_bytes" "$t_verify")"
printf '%-32s %8s s %8s MiB/s\n' "openssl dgst -sha256 (bundle)" "$t_dgst" "$(mbps "$bundle_bytes" "$t_dgst")"
printf '\nratios (throughput, higher is better for gpubundle):\n'
goal "create vs tar -cf + sync" "$(ratio "($bundle_bytes / $t_create) / ($tar_bytes / $t_tar)")" ">=" 0.8 x
goal "create vs tar | zstd + sync" "$(ratio "($bundle_bytes / $t_create) / ($tar_bytes / $t_tarzstd)")" ">=" 1.5 x
goal "verify vs openssl dgst" "$(ratio "$t_dgst / $t_verify")" ">=" 1.5 x
goal "bundle create: peak RSS" "$((rss_create / 1024))" "<" 100 " MiB"
goal "bundle verify: peak RSS" "$((rss_verify / 1024))" "<" 100 " MiB"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
