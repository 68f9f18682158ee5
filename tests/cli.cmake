add_test(NAME cli-resolve COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/cli_resolve.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(cli-resolve PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT "GB_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
