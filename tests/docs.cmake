# docs/cli.md and completions/gpubundle.bash are generated from the binary;
# this fails with a diff when they are stale, and exercises bash completion.
add_test(NAME cli-docs COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/cli_docs.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(cli-docs PROPERTIES TIMEOUT 300 ENVIRONMENT "GB_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
# Every --help example runs as written, in a scratch folder with the files it
# names, against stand-in registries, chart, installer and this kernel's build
# tree (issue 27.8). Skips (77) without docker-registry, skopeo or linux-headers.
add_test(NAME cli-examples COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/cli_examples.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(cli-examples PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900
  ENVIRONMENT "GB_SOURCE_DIR=${CMAKE_SOURCE_DIR};GB_CACHE_DIR=${CMAKE_BINARY_DIR}/cache")
