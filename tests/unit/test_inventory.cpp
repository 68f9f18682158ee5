// The inventory file (bundles/inventory.hpp) and what a delta reads from it.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "bundles/inventory.hpp"

using namespace gb;
using namespace gb::bundles;

TEST_CASE("an inventory reads back what was written", "[bundle][inventory]") {
  Inventory inv;
  inv.source = "registry.site:5000/gpu";
  inv.repositories = 2;
  inv.blobs = {"sha256:" + std::string(64, 'b'), "sha256:" + std::string(64, 'a')};
  std::string text = inventory_json(inv);
  auto j = nlohmann::json::parse(text);
  CHECK(j["kind"] == "Inventory");
  CHECK(j["schemaVersion"] == 1);
  CHECK(j["repositories"] == 2);
  CHECK(j["blobs"][0] == "sha256:" + std::string(64, 'a'));  // sorted
  auto back = parse_inventory(text, "site.inventory.json").value();
  REQUIRE(back.has_value());
  CHECK(back->source == inv.source);
  CHECK(back->blobs == inv.blobs);
}

TEST_CASE("an inventory without blobs is refused; other JSON is not an inventory", "[bundle][inventory]") {
  CHECK_FALSE(parse_inventory(R"({"kind": "Lock"})", "x").value().has_value());
  CHECK_FALSE(parse_inventory("[1]", "x").value().has_value());
  CHECK(parse_inventory(R"({"kind": "Inventory"})", "inv.json").error().message == "inv.json: inventory without a blobs list");
  auto r = parse_inventory(R"({"kind": "Inventory", "blobs": [1]})", "inv.json");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::Input);
  CHECK(r.error().message == "inv.json: inventory blobs must be digest strings");
}
