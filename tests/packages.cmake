# Package repository clients (issue 17) against stand-in repositories made
# from real Debian packages (tests/tools/apt_standin.py: apt-ftparchive, gpg,
# python3 http.server on 127.0.0.1). The .deb files are cached in
# build/cache/apt-debs; exit 77 = skipped (a tool missing, or offline with
# nothing cached). Labelled hostile: tampered indexes, signatures and packages.
add_executable(fetch_packages_main ${CMAKE_CURRENT_SOURCE_DIR}/tools/fetch_packages_main.cpp)
target_link_libraries(fetch_packages_main PRIVATE gb_settings gb_packages gb_recipes gb_signing gb_common)
set_target_properties(fetch_packages_main PROPERTIES GB_TEST_CODE ON)
add_test(NAME packages-apt COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/packages_apt.sh
                                   $<TARGET_FILE:fetch_packages_main>)
set_tests_properties(packages-apt PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS "integration;hostile"
  ENVIRONMENT "GB_CACHE_DIR=${CMAKE_BINARY_DIR}/cache")
# The closure against apt itself on this machine's real Debian lists (no network).
add_test(NAME packages-apt-resolve COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/packages_apt_resolve.sh
                                           $<TARGET_FILE:fetch_packages_main>)
set_tests_properties(packages-apt-resolve PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS integration)
