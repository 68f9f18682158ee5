# Site import suites: real docker-registry instances, skopeo cross-checks.
add_test(NAME import-e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/import.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(import-e2e PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 400)
