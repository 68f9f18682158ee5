# Hostile input (issue 11): the sanitizer job runs `ctest -L hostile`.
add_test(NAME unit-hostile COMMAND unit_tests "[hostile]")
add_test(NAME hostile-input COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/hostile_input.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(unit-hostile hostile-input PROPERTIES LABELS hostile TIMEOUT 300)
