# gpubundle report: the sample results into HTML, looked at by headless Chromium
# (the plot's pixels counted in the screenshot). Skips (77) without chromium
# outside CI.
add_test(NAME report-browser
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/report.sh $<TARGET_FILE:gpubundle> ${CMAKE_SOURCE_DIR})
set_tests_properties(report-browser PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180)
