# gpubundle serve (issue 31): a bundle served read-only to real clients
# (skopeo copy --all, ctr through the kit's hosts.toml, podman through the
# kit's CRI-O drop-in, gpubundle mirror) over HTTP and TLS, with and without
# basic auth; split volumes, a delta with its base, a tampered blob, SIGTERM.
# Skips (77) without docker-registry or skopeo (the stand-in upstream).
add_test(NAME serve COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/serve.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(serve PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 400)
# Hostile clients: traversal and odd names, other digests, bad ranges, a huge
# header, HTTP/1.0, pipelining, slowloris and 10,000 idle connections.
add_test(NAME serve-hostile COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/serve_hostile.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(serve-hostile PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
