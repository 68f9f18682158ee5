# Self-test of the real-peer harness (tests/tools/*.py): registries in every
# auth mode, seeded images checked with skopeo, Helm repo, fault proxy.
add_test(NAME tools-harness COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/tools.sh ${GB_SHARED_DIR})
set_tests_properties(tools-harness PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
