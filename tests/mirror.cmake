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
# A registry that cannot be talked to at all (plain HTTP at https://, a closed
# port, no CA, an unknown name): one line per host with the fix, then what was
# pushed or stored, for import and mirror.
add_test(NAME registry-unreachable COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/unreachable.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(registry-unreachable PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
# The registry client against live docker-registry instances: its own Catch2
# binary, so that unit_tests opens no socket and starts no process.
add_executable(registry_live_tests ${CMAKE_CURRENT_SOURCE_DIR}/integration/registry_live.cpp
                                   ${CMAKE_CURRENT_SOURCE_DIR}/unit/fixtures.cpp $<TARGET_OBJECTS:gb_test_main>)
target_include_directories(registry_live_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/unit)
target_link_libraries(registry_live_tests PRIVATE gb_settings gb_mirror gb_recipes gb_signing gb_common Catch2::Catch2
                                                  LibArchive::LibArchive yaml-cpp nlohmann_json::nlohmann_json)
target_compile_definitions(registry_live_tests PRIVATE GB_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
set_target_properties(registry_live_tests PROPERTIES GB_TEST_CODE ON)  # built light, like unit_tests
add_test(NAME registry-live COMMAND registry_live_tests --order rand)
# [hostile] cases (no credentials to another origin) run under `ctest -L hostile` too.
set_tests_properties(registry-live PROPERTIES TIMEOUT 600 LABELS "integration;hostile")
