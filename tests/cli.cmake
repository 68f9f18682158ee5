add_test(NAME cli-resolve COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/cli_resolve.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(cli-resolve PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT "GB_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
# gpubundle diff: in-repo locks, two real releases from ../shared (skipped without it),
# bytes to ship from a store mirrored from a live docker-registry (skipped without it).
add_test(NAME cli-diff COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/cli_diff.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(cli-diff PROPERTIES TIMEOUT 300
                     ENVIRONMENT "GB_SOURCE_DIR=${CMAKE_SOURCE_DIR};GB_SHARED_DIR=${GB_SHARED_DIR}")
# A newcomer's first hour: typos with suggestions, gpubundle alone, the global
# store in diff and inventory, --json on report and node detect (offline).
add_test(NAME cli-usage COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/cli_usage.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(cli-usage PROPERTIES ENVIRONMENT "GB_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
