# Site import suites: real docker-registry instances, skopeo cross-checks.
add_test(NAME import-e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/import.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(import-e2e PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 400)
# Issue 26: recipes carrying some platforms of upstream's multi-arch indexes
# (amd64, amd64+arm64, arm64; buildx attestations on the OCI ones) imported into
# docker-registry over HTTP and TLS: the site's indexes list exactly the carried
# platforms with upstream's children, the kit's digests are what the site holds,
# containerd, podman and skopeo pull by them per platform; --platforms all gives
# upstream's digests; an inventory delta carries and pushes no blob the site has.
# Skips (77) without docker-registry, skopeo, containerd or podman, or when a
# runtime cannot start here.
add_test(NAME import-platforms
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/import_platforms.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(import-platforms PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)
