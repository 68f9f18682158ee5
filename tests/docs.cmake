# docs/cli.md and completions/gpubundle.bash are generated from the binary;
# this fails with a diff when they are stale, and exercises bash completion.
add_test(NAME cli-docs COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/cli_docs.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(cli-docs PROPERTIES TIMEOUT 300 ENVIRONMENT "GB_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
