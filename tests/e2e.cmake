# End to end: what scripts/demo.sh shows, with assertions.
add_test(NAME e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/e2e.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(e2e PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 400)
# The README's Quick start, read from README.md and run as written against the stand-in
# upstream, install.sh and verify.sh with the real helm and kubectl against the Kubernetes
# API stand-in. Skips (77) without docker-registry or skopeo, and, after running and
# checking the other commands, without the real clients.
add_test(NAME quickstart COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/quickstart.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(quickstart PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 400
                     ENVIRONMENT "GB_SOURCE_DIR=${CMAKE_SOURCE_DIR};GB_CLIENTS_BIN=${CMAKE_SOURCE_DIR}/.cache/tools/bin")
# The README's main command, scripts/demo.sh, against this build tree (its build step finds it up to date).
add_test(NAME demo COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/demo.sh ${CMAKE_BINARY_DIR} ${CMAKE_GENERATOR})
set_tests_properties(demo PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 ENVIRONMENT "GB_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
# Conventional driver at the site (issue 17): build -> import -> the repository
# image pulled back from the site registry and read by real apt with the kit's
# sources and key. Needs the stand-in apt repository's .deb cache (build/cache).
add_test(NAME package-repo COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/package_repo.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(package-repo PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS "integration"
  ENVIRONMENT "GB_CACHE_DIR=${CMAKE_BINARY_DIR}/cache")
# The DOCA driver's build on the node from the same repository (issue 29.2),
# read by real apt with the kit's network-repo/ files.
add_test(NAME package-repo-doca COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/package_repo_doca.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(package-repo-doca PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS "integration"
  ENVIRONMENT "GB_CACHE_DIR=${CMAKE_BINARY_DIR}/cache;GB_SHARED_DIR=${GB_SHARED_DIR}")
# The same for the RHEL family: rpm-md site repository read by real dnf.
add_test(NAME package-repo-rpm COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/package_repo_rpm.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(package-repo-rpm PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS "integration")
