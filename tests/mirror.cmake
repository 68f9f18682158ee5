# Mirror and content store suites: real docker-registry instances on 127.0.0.1
# (tests/tools), skopeo and umoci as peers. Exit 77 = skipped (tool missing).
add_test(NAME mirror-e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/mirror.sh $<TARGET_FILE:gpubundle>)
add_test(NAME mirror-faults COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/mirror_faults.sh $<TARGET_FILE:gpubundle>)
add_test(NAME mirror-auth COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/mirror_auth.sh $<TARGET_FILE:gpubundle>)
add_test(NAME mirror-chart COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/mirror_chart.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(mirror-e2e mirror-faults mirror-auth mirror-chart PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
# Every command x every chart source x recipe or lock (issue 12): one seeded registry, one Helm repo.
add_test(NAME chart-paths COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/chart_paths.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(chart-paths PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 400)
# Faulty registries and bad credentials: also run by the sanitizer job (docs/security.md).
set_tests_properties(mirror-faults mirror-auth PROPERTIES LABELS hostile)
