# Hostile input at the trust boundary (issue 11): a misbehaving registry, kill -9,
# concurrent writers, a full disk and hostile recipes, locks and configs.
# `ctest -L hostile` runs them (the sanitizer job too); the unit cases tagged
# [hostile] run under the same label. Exit 77 = skipped (tool or permission missing).
add_test(NAME hostile-registry COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/hostile_registry.sh $<TARGET_FILE:gpubundle>)
add_test(NAME hostile-store-crash COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/store_crash.sh $<TARGET_FILE:gpubundle>)
add_test(NAME hostile-unit COMMAND unit_tests "[hostile]" --warn NoAssertions)
add_test(NAME hostile-input COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/hostile_input.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(hostile-registry hostile-store-crash hostile-unit hostile-input PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS hostile)
