# Bundle suites: a store filled by `gpubundle mirror` from a real docker-registry.
add_test(NAME bundle-cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/bundle.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(bundle-cli PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS hostile)  # tampered bundles
# Hostile bundles (issue 11): crafted variants of a real bundle against verify,
# import into a real docker-registry, and node-image export; the sanitizer CI
# job runs every test labelled hostile.
add_test(NAME hostile-bundle COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/hostile_bundle.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(hostile-bundle PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900 LABELS hostile)
add_test(NAME bundle-full-disk COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/bundle_full_disk.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(bundle-full-disk PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS hostile)
