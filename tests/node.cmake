# Node check: stand-in libnvidia-ml.so.1 and libcuda.so.1 (tests/fakes), the
# unit tests that load them, and the real binaries on this GPU-less machine.
set(node_fakes_dir ${CMAKE_CURRENT_BINARY_DIR}/fakes)
foreach(fake nvml cuda)
  add_library(fake_${fake} SHARED ${CMAKE_CURRENT_SOURCE_DIR}/fakes/fake_${fake}.c)
  set_target_properties(fake_${fake} PROPERTIES PREFIX "" SUFFIX "" LIBRARY_OUTPUT_DIRECTORY ${node_fakes_dir})
endforeach()
set_target_properties(fake_nvml PROPERTIES OUTPUT_NAME libnvidia-ml.so.1)
set_target_properties(fake_cuda PROPERTIES OUTPUT_NAME libcuda.so.1)
add_dependencies(unit_tests fake_nvml fake_cuda)
target_compile_definitions(unit_tests PRIVATE GB_NODE_FAKES_DIR="${node_fakes_dir}")

add_test(NAME node-cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/node.sh $<TARGET_FILE:gpubundle>
                               $<TARGET_FILE:gpubundle-node> ${node_fakes_dir})
set_tests_properties(node-cli PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
