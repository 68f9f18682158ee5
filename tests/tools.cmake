# Self-test of the real-peer harness (tests/tools/*.py): registries in every
# auth mode, seeded images checked with skopeo, Helm repo, fault proxy.
add_test(NAME tools-harness COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/tools.sh)
set_tests_properties(tools-harness PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
# The stand-in chart (tests/tools/chart.py): made in a copy of the repository
# with nothing beside it, and compared with the real chart in ../shared when present.
add_test(NAME standin-chart COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/standin_chart.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(standin-chart PROPERTIES TIMEOUT 300
                     ENVIRONMENT "GB_SOURCE_DIR=${CMAKE_SOURCE_DIR};GB_SHARED_DIR=${GB_SHARED_DIR}")
# The Kubernetes API stand-in (tests/tools/kube_api.py) driven by the real kubectl
# and helm that scripts/install-deps.sh puts into .cache/tools/bin. Skips (77)
# without them.
add_test(NAME tools-kube-api COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/kube_api.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(tools-kube-api PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120
                     ENVIRONMENT "GB_CLIENTS_BIN=${CMAKE_SOURCE_DIR}/.cache/tools/bin")
