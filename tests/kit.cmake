# Install kit: gpubundle overrides end to end with stub helm/kubectl, shellcheck.
# Skips (77) when shellcheck is absent.
add_test(NAME kit-overrides
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/kit.sh $<TARGET_FILE:gpubundle> ${CMAKE_SOURCE_DIR})
set_tests_properties(kit-overrides PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
