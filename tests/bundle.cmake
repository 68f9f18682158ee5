# Bundle suites: a store filled by `gpubundle mirror` from a real docker-registry.
add_test(NAME bundle-cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/bundle.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(bundle-cli PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS hostile)  # tampered bundles
