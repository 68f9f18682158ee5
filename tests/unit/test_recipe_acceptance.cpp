#include <catch2/catch.hpp>

#include "recipes/lock.hpp"
#include "recipes/recipe.hpp"

using namespace gb;
using namespace gb::recipes;

namespace {

const char* k_base = R"(apiVersion: gpubundle/v1
kind: Recipe
operator: {version: v26.7.0}
target: {gpus: [H200], os: ubuntu22.04}
acceptance:
  nccl:
)";

Result<Recipe> parse_nccl(const std::string& body) { return parse_recipe(std::string(k_base) + body, "recipe.yaml"); }

}  // namespace

TEST_CASE("acceptance.nccl: defaults, and the MPI Operator image when installing", "[recipe][acceptance]") {
  auto r = parse_nccl("    image: ghcr.io/example/nccl-tests:2.19.6\n").value_or_throw();
  REQUIRE(r.nccl_acceptance);
  CHECK(r.nccl_acceptance->image == "ghcr.io/example/nccl-tests:2.19.6");
  CHECK(r.nccl_acceptance->nodes == 2);
  CHECK(r.nccl_acceptance->gpus_per_node == 8);
  CHECK(r.nccl_acceptance->min_bytes == "8");
  CHECK(r.nccl_acceptance->max_bytes == "8G");
  CHECK(r.nccl_acceptance->min_bus_bw == 0);
  CHECK_FALSE(r.nccl_acceptance->mpi_operator_install);
  CHECK(r.nccl_acceptance->mpi_operator_image.empty());

  auto full = parse_nccl(
                  "    image: ghcr.io/example/nccl-tests:2.19.6\n    nodes: 4\n    gpusPerNode: 2\n    minBytes: 1M\n"
                  "    maxBytes: 1G\n    minBusBw: 350.5\n    mpiOperator: {install: true}\n")
                  .value_or_throw();
  CHECK(full.nccl_acceptance->nodes == 4);
  CHECK(full.nccl_acceptance->gpus_per_node == 2);
  CHECK(full.nccl_acceptance->min_bytes == "1M");
  CHECK(full.nccl_acceptance->min_bus_bw == 350.5);
  CHECK(full.nccl_acceptance->mpi_operator_image == k_default_mpi_operator_image);

  CHECK_FALSE(parse_recipe(std::string(k_base).substr(0, std::string(k_base).find("acceptance")), "recipe.yaml")
                  .value_or_throw()
                  .nccl_acceptance);
}

TEST_CASE("acceptance.nccl: every bad field is one line naming it", "[recipe][acceptance]") {
  const std::string img = "    image: ghcr.io/example/nccl-tests:2.19.6\n";
  struct Case {
    std::string body;
    std::string expect;
  };
  std::vector<Case> cases = {
      {"    nodes: 2\n", "recipe.yaml:7: acceptance.nccl.image: missing"},
      {"    image: \"ghcr.io/Example/nccl:1\"\n", "recipe.yaml:7: acceptance.nccl.image: invalid image reference"},
      {img + "    nodes: 0\n", "recipe.yaml:8: acceptance.nccl.nodes: must be between 1 and 1024"},
      {img + "    nodes: two\n", "recipe.yaml:8: acceptance.nccl.nodes: must be a whole number"},
      {img + "    gpusPerNode: 65\n", "recipe.yaml:8: acceptance.nccl.gpusPerNode: must be between 1 and 64"},
      {img + "    maxBytes: 8GB\n", "recipe.yaml:8: acceptance.nccl.maxBytes: '8GB' is not a size all_reduce_perf reads"},
      {img + "    minBytes: \"-1\"\n", "recipe.yaml:8: acceptance.nccl.minBytes: '-1' is not a size"},
      {img + "    minBytes: 1G\n    maxBytes: 1M\n", "recipe.yaml:8: acceptance.nccl.minBytes: 1G is more than maxBytes 1M"},
      {img + "    minBusBw: fast\n", "recipe.yaml:8: acceptance.nccl.minBusBw: must be a number"},
      {img + "    minBusBw: -1\n", "recipe.yaml:8: acceptance.nccl.minBusBw: must be 0 (no bound) or more GB/s"},
      {img + "    mpiOperator: {install: maybe}\n", "recipe.yaml:8: acceptance.nccl.mpiOperator.install: must be true or false"},
      {img + "    mpiOperator: {image: docker.io/mpioperator/mpi-operator:0.8.0}\n",
       "recipe.yaml:8: acceptance.nccl.mpiOperator.image: is only carried with mpiOperator.install: true"},
      {img + "    mpiOperator: {install: true, image: \"x y\"}\n", "recipe.yaml:8: acceptance.nccl.mpiOperator.image: invalid image reference"},
      {img + "    mpiOperator: {instal: true}\n", "recipe.yaml:8: acceptance.nccl.mpiOperator.instal: unknown field (did you mean 'install'?)"},
      {img + "    gpus: 8\n", "recipe.yaml:8: acceptance.nccl.gpus: unknown field"},
      {"    image: [a]\n", "recipe.yaml:7: acceptance.nccl.image: must be a string"},
  };
  for (const auto& c : cases) {
    INFO(c.body);
    auto r = parse_nccl(c.body);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::Input);
    CHECK(r.error().message.rfind(c.expect, 0) == 0);
    CHECK(r.error().message.find('\n') == std::string::npos);
  }
  auto other = parse_recipe(std::string(k_base).substr(0, std::string(k_base).find("  nccl:")) + "  iperf: {}\n", "recipe.yaml");
  REQUIRE_FALSE(other.ok());
  CHECK(other.error().message.rfind("recipe.yaml:6: acceptance.iperf: unknown field", 0) == 0);
}

TEST_CASE("acceptance.nccl.network: a NetworkAttachmentDefinition, only with a network section that has an RDMA device plugin",
          "[recipe][acceptance]") {
  const std::string img = "    image: ghcr.io/example/nccl-tests:2.19.6\n";
  auto with_network = [&](const std::string& operands, const std::string& nccl) {
    return parse_recipe(std::string(k_base) + img + nccl + "network:\n  version: v26.4.1\n" + operands, "recipe.yaml");
  };
  auto r = with_network("", "    network: roce-net\n").value_or_throw();  // default operands: the shared RDMA device plugin
  CHECK(r.nccl_acceptance->network == "roce-net");
  CHECK(with_network("  operands: [sriovDevicePlugin]\n", "    network: nvidia-network-operator/hostdev-net\n").value_or_throw().nccl_acceptance->network ==
        "nvidia-network-operator/hostdev-net");
  CHECK(with_network("  operands: [rdmaSharedDevicePlugin]\n", "").value_or_throw().nccl_acceptance->network.empty());

  auto message = [](const Result<Recipe>& res) { return res.ok() ? std::string() : res.error().message; };
  CHECK(message(with_network("  operands: [ofedDriver, nfd]\n", "")).rfind(
            "recipe.yaml:7: acceptance.nccl: with a network section the NCCL run tests the fabric, but network.operands has no RDMA "
            "device plugin (rdmaSharedDevicePlugin or sriovDevicePlugin)",
            0) == 0);
  for (const char* bad : {"Roce", "a/b/c", "-net", "ns.with.dots/net"}) {
    INFO(bad);
    CHECK(message(with_network("", std::string("    network: ") + bad + "\n")).rfind("recipe.yaml:8: acceptance.nccl.network: ", 0) == 0);
    CHECK(message(with_network("", std::string("    network: ") + bad + "\n")).find("is not a NetworkAttachmentDefinition name") != std::string::npos);
  }
  CHECK(message(parse_nccl(img + "    network: roce-net\n")) ==
        "recipe.yaml:8: acceptance.nccl.network: names a secondary network of the Network Operator, but the recipe has no network section");
}

TEST_CASE("is_network_attachment: [namespace/]name as Multus reads it", "[recipe][acceptance]") {
  CHECK(is_network_attachment("roce-net"));
  CHECK(is_network_attachment("net.v1"));
  CHECK(is_network_attachment("nvidia-network-operator/roce-net"));
  CHECK_FALSE(is_network_attachment(""));
  CHECK_FALSE(is_network_attachment("/roce"));
  CHECK_FALSE(is_network_attachment("ns/"));
  CHECK_FALSE(is_network_attachment("roce@eth1"));
  CHECK_FALSE(is_network_attachment("a, b"));
  CHECK_FALSE(is_network_attachment(std::string(64, 'a') + "/x"));
}
