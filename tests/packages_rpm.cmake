# The rpm-md client against a stand-in RHEL mirror made with Debian's rpm,
# createrepo_c and gpg (tests/tools/rpm-standin.sh), cross-checked with dnf;
# and the site repository it writes, read by dnf with repo_gpgcheck.
add_executable(fetch_packages_rpm ${CMAKE_CURRENT_SOURCE_DIR}/tools/fetch_packages_rpm_main.cpp)
target_link_libraries(fetch_packages_rpm PRIVATE gb_settings gb_packages gb_recipes gb_signing gb_common)
set_target_properties(fetch_packages_rpm PROPERTIES GB_TEST_CODE ON)
add_test(NAME packages-rpm COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/packages_rpm.sh $<TARGET_FILE:fetch_packages_rpm>)
set_tests_properties(packages-rpm PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "integration;hostile")
