# Driver artifacts (issue 6): the nvidia-driver entrypoint against stubs,
# driver build (kbuild, signing, image in the store; --kernel-headers with
# Debian's .debs and a RHEL-shaped kernel-devel rpm), node-image bake and the
# overlay artifact through bundle, export and import; build --installer.
add_test(NAME driver-entrypoint COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/driver_entrypoint.sh
                                        ${CMAKE_SOURCE_DIR}/node-images/nvidia-driver)
add_test(NAME driver-build COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/driver.sh $<TARGET_FILE:gpubundle>)
add_test(NAME node-image-bake COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/bake.sh $<TARGET_FILE:gpubundle>)
add_test(NAME build-driver COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/build_driver.sh $<TARGET_FILE:gpubundle>)
add_test(NAME node-overlay-transport COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/overlay.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(driver-entrypoint driver-build build-driver node-image-bake node-overlay-transport PROPERTIES
  SKIP_RETURN_CODE 77
  ENVIRONMENT "GB_SOURCE_DIR=${CMAKE_SOURCE_DIR};GB_CACHE_DIR=${CMAKE_BINARY_DIR}/cache")
set_tests_properties(driver-build build-driver node-image-bake node-overlay-transport PROPERTIES RESOURCE_LOCK kbuild)
# Issue 17: precompiled images for two kernels whose headers come from a signed apt source.
add_test(NAME precompiled-packages COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/precompiled_packages.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(precompiled-packages PROPERTIES SKIP_RETURN_CODE 77 RESOURCE_LOCK kbuild
  ENVIRONMENT "GB_SOURCE_DIR=${CMAKE_SOURCE_DIR};GB_CACHE_DIR=${CMAKE_BINARY_DIR}/cache")
# Issue 32: the driver build matrix: plan, six entries at once pushing to a
# registry, assembly byte-identical to one machine; Job and Workflow documents.
add_test(NAME driver-matrix COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/driver_matrix.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(driver-matrix PROPERTIES SKIP_RETURN_CODE 77 RESOURCE_LOCK kbuild
  ENVIRONMENT "GB_SOURCE_DIR=${CMAKE_SOURCE_DIR};GB_CACHE_DIR=${CMAKE_BINARY_DIR}/cache;GB_CLIENTS_BIN=${CMAKE_SOURCE_DIR}/.cache/tools/bin")
# Issue 32: the gpubundle image that build Jobs run, from a stand-in apt
# repository of real Debian packages; a driver build inside it equals one here.
add_test(NAME tool-image COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/tool_image.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(tool-image PROPERTIES SKIP_RETURN_CODE 77 RESOURCE_LOCK kbuild TIMEOUT 900
  ENVIRONMENT "GB_SOURCE_DIR=${CMAKE_SOURCE_DIR};GB_CACHE_DIR=${CMAKE_BINARY_DIR}/cache")
