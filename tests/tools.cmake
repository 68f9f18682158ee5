# Self-test of the real-peer harness (tests/tools/*.py): registries in every
# auth mode, seeded images checked with skopeo, Helm repo, fault proxy.
add_test(NAME tools-harness COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/tools.sh)
set_tests_properties(tools-harness PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
# The stand-in chart (tests/tools/chart.py): made in a copy of the repository
# with nothing beside it, and compared with the real chart in ../shared when present.
add_test(NAME standin-chart COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/standin_chart.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(standin-chart PROPERTIES TIMEOUT 300
                     ENVIRONMENT "GB_SOURCE_DIR=${CMAKE_SOURCE_DIR};GB_SHARED_DIR=${GB_SHARED_DIR}")
