# Kernel module signing against real kbuild, kmod, binutils and the kernel's own
# scripts/sign-file; skips (77) when Debian's linux-headers are absent.
add_test(NAME signing-modules COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/signing_modules.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(signing-modules PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
add_test(NAME signing-keys-cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/signing_keys.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(signing-keys-cli PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS hostile)  # bad keys
