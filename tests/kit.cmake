# Install kit: gpubundle overrides end to end, shellcheck, the kit's files; then
# with the real kubectl and helm against the Kubernetes API stand-in, what
# kit-cluster-install does not reach: install.sh's missing prerequisites (no
# helm, no context, a dead API server), verify.sh's FAIL lines and --json (dead
# cluster, no context, failed MIG state; a stub kubectl in front of the real one
# only for an RBAC refusal, which the stand-in cannot make), mig.sh NODE..., the
# DRA kit's verify.sh, the precompiled kit's install order. Skips (77) without
# shellcheck, and after the rest has passed when the real clients are absent.
add_test(NAME kit-overrides
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/kit.sh $<TARGET_FILE:gpubundle> ${CMAKE_SOURCE_DIR})
set_tests_properties(kit-overrides PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180
                     ENVIRONMENT "GB_CLIENTS_BIN=${CMAKE_SOURCE_DIR}/.cache/tools/bin")
# The kit's containerd and CRI-O config read by real runtimes: a private containerd
# (ctr --hosts-dir) and podman (containers-registries.conf.d, as CRI-O) pull a small
# lock through it from an HTTP and an HTTPS site. Skips (77) when a runtime or
# docker-registry is absent, or when a runtime cannot start here.
add_test(NAME kit-runtimes
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/kit_runtimes.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(kit-runtimes PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 400)
# The kit's alerts and Grafana dashboard checked by promtool (check rules, test
# rules, the dashboard's queries as PromQL). Skips (77) without promtool outside CI.
add_test(NAME kit-monitoring
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/monitoring.sh $<TARGET_FILE:gpubundle> ${CMAKE_SOURCE_DIR})
set_tests_properties(kit-monitoring PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
# The Network Operator: resolve and overrides on a recipe with a network
# section, over both shared releases. Skips (77) when ../shared is absent.
add_test(NAME kit-network
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/network.sh $<TARGET_FILE:gpubundle>)
set_tests_properties(kit-network PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180
                     ENVIRONMENT "GB_SOURCE_DIR=${CMAKE_SOURCE_DIR};GB_SHARED_DIR=${GB_SHARED_DIR}")
# The NCCL acceptance job (recipe acceptance.nccl): lock images, the MPIJob on the site
# registry, nccl-allreduce.sh --parse on real all_reduce_perf output and hand-edited
# failing copies, bad usage, shellcheck; then with the real kubectl against the
# Kubernetes API stand-in, what kit-cluster-nccl does not reach: no context, no
# MPIJob CRD, a failed MPIJob of another size. Skips (77) without shellcheck, and
# after the rest has passed when the real clients are absent.
add_test(NAME kit-nccl-acceptance
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/nccl_acceptance.sh $<TARGET_FILE:gpubundle> ${CMAKE_SOURCE_DIR})
set_tests_properties(kit-nccl-acceptance PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 240
                     ENVIRONMENT "GB_CLIENTS_BIN=${CMAKE_SOURCE_DIR}/.cache/tools/bin")
# The kit's scripts with the real kubectl and helm (scripts/install-deps.sh puts
# them into .cache/tools/bin) against the Kubernetes API stand-in
# (tests/tools/kube_api.py), asserting what reaches the server: install.sh,
# dry run and real, in the default namespace and in GPUBUNDLE_NAMESPACE's, with
# a package-repo.yaml; nccl-allreduce.sh --install-mpi-operator (dry run and
# real, the upstream manifest from ../shared when present), --dry-run and a
# whole run; upgrade.sh, the test playing the operator's upgrade controller.
# Skip (77) without the real clients.
add_test(NAME kit-cluster-install
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/kit_cluster.sh $<TARGET_FILE:gpubundle> ${CMAKE_SOURCE_DIR})
set_tests_properties(kit-cluster-install PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180
                     ENVIRONMENT "GB_CLIENTS_BIN=${CMAKE_SOURCE_DIR}/.cache/tools/bin;GB_SHARED_DIR=${GB_SHARED_DIR}")
# network.sh on the real network-operator chart from ../shared (skip 77 without it
# or the real clients): dry run, pull secret, install, GPUBUNDLE_NETWORK_NAMESPACE,
# the test playing the operator by setting the NicClusterPolicy's status.
add_test(NAME kit-cluster-network
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/network_cluster.sh $<TARGET_FILE:gpubundle> ${CMAKE_SOURCE_DIR})
set_tests_properties(kit-cluster-network PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 240
                     ENVIRONMENT "GB_CLIENTS_BIN=${CMAKE_SOURCE_DIR}/.cache/tools/bin;GB_SHARED_DIR=${GB_SHARED_DIR}")
add_test(NAME kit-cluster-nccl
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/nccl_cluster.sh $<TARGET_FILE:gpubundle> ${CMAKE_SOURCE_DIR})
set_tests_properties(kit-cluster-nccl PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180
                     ENVIRONMENT "GB_CLIENTS_BIN=${CMAKE_SOURCE_DIR}/.cache/tools/bin;GB_SHARED_DIR=${GB_SHARED_DIR}")
add_test(NAME kit-cluster-upgrade
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/upgrade_cluster.sh $<TARGET_FILE:gpubundle> ${CMAKE_SOURCE_DIR})
set_tests_properties(kit-cluster-upgrade PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180
                     ENVIRONMENT "GB_CLIENTS_BIN=${CMAKE_SOURCE_DIR}/.cache/tools/bin")
# upgrade.sh's failure paths (a failed canary or later node, no progress, no
# driver pod, an unchanged driver, missing prerequisites, bad usage), the same
# way: the real clients, the test playing the operator's driver upgrade
# (tests/tools/upgrade_controller.py). Skips (77) without the real clients.
add_test(NAME kit-cluster-upgrade-failures
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/upgrade_cluster_failures.sh $<TARGET_FILE:gpubundle> ${CMAKE_SOURCE_DIR})
set_tests_properties(kit-cluster-upgrade-failures PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180
                     ENVIRONMENT "GB_CLIENTS_BIN=${CMAKE_SOURCE_DIR}/.cache/tools/bin")
# The kit's values with the real charts: helm lint and helm template over every
# GPU Operator release in ../shared x recipe shapes (conventional with every
# optional operand, precompiled, host with VM passthrough, vGPU on two
# platforms) and the Network Operator releases; tests/tools/operand_check.py
# holds every rendered workload image and every operand the operator would
# deploy (its isStateEnabled at that tag) to the site registry and the lock.
# Skips (77) without the real helm or ../shared.
add_test(NAME kit-helm-matrix
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/helm_matrix.sh $<TARGET_FILE:gpubundle> ${CMAKE_SOURCE_DIR})
set_tests_properties(kit-helm-matrix PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 400
                     ENVIRONMENT "GB_CLIENTS_BIN=${CMAKE_SOURCE_DIR}/.cache/tools/bin;GB_SHARED_DIR=${GB_SHARED_DIR}")
# Every manifest the kit writes against its real schema, unknown fields refused
# (tests/tools/k8s_schema.py): built-in kinds against the official Kubernetes
# Python client's models, MPIJob, PrometheusRule and NicClusterPolicy against the
# upstream CRDs in ../shared (skipped with a note without it); hand-broken copies
# refused. Skips (77) without python3-jsonschema or python3-kubernetes.
add_test(NAME kit-schemas
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integration/kit_schemas.sh $<TARGET_FILE:gpubundle> ${CMAKE_SOURCE_DIR})
set_tests_properties(kit-schemas PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                     ENVIRONMENT "GB_SHARED_DIR=${GB_SHARED_DIR}")
