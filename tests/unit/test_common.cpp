// common/'s shared basics: sizes, templates, time stamps, SOURCE_DATE_EPOCH,
// and the libarchive and zstd owners.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>
#include <string>

#include "common/archive_raii.hpp"
#include "common/strings.hpp"
#include "common/time.hpp"
#include "common/zstd_raii.hpp"

using namespace gb;

namespace {

// Sets SOURCE_DATE_EPOCH for one scope and puts back what was there.
struct EpochEnv {
  std::optional<std::string> saved;
  explicit EpochEnv(const char* value) {
    if (const char* v = std::getenv("SOURCE_DATE_EPOCH")) saved = v;
    if (value) ::setenv("SOURCE_DATE_EPOCH", value, 1);
    else ::unsetenv("SOURCE_DATE_EPOCH");
  }
  ~EpochEnv() {
    if (saved) ::setenv("SOURCE_DATE_EPOCH", saved->c_str(), 1);
    else ::unsetenv("SOURCE_DATE_EPOCH");
  }
};

}  // namespace

TEST_CASE("sizes parse like a platform engineer writes them", "[common]") {
  CHECK(parse_size("4G").value() == 4ull << 30);
  CHECK(parse_size("700M").value() == 700ull << 20);
  CHECK(parse_size("4Gi").value() == 4ull << 30);
  CHECK(parse_size("4GiB").value() == 4ull << 30);
  CHECK(parse_size("512k").value() == 512ull << 10);
  CHECK(parse_size("2T").value() == 2ull << 40);
  CHECK(parse_size(" 1048576 ").value() == 1048576);
  CHECK(parse_size("700MB").value() == 700ull << 20);
  CHECK(parse_size("4X").error().message == "size '4X': unknown unit (use K, M, G or T)");
  CHECK(parse_size("").error().kind == ErrorKind::Input);
  CHECK(parse_size("0").error().message == "size '0' is not a size like 4G, 700M or 1048576");
  CHECK_FALSE(parse_size("-4G").ok());
  CHECK_FALSE(parse_size("4.5G").ok());
  // 2^64 bytes and more used to wrap around to a small size.
  CHECK(parse_size("16777216T").error().message == "size '16777216T' is too large");
  CHECK(parse_size("16777215T").value() == 16777215ull << 40);
}

TEST_CASE("templates fill every @KEY@ once, and only known keys", "[common]") {
  CHECK(fill_template("a=@A@ b=@B@ a=@A@", {{"A", "1"}, {"B", "two"}}) == "a=1 b=two a=1");
  // A value is not searched again, so it cannot expand another token.
  CHECK(fill_template("@A@@B@", {{"A", "@B@"}, {"B", "x"}}) == "@B@x");
  CHECK(fill_template("@A@", {{"A", "@A@@A@"}}) == "@A@@A@");
  CHECK(fill_template("keep @UNKNOWN@ and user@host", {{"A", "1"}}) == "keep @UNKNOWN@ and user@host");
  CHECK(fill_template("@A@", {{"A", ""}}).empty());
  // Shell text around tokens: "$@" and addresses do not hide the next token.
  CHECK(fill_template("exec \"$@\" --v=@V@ a@b@V@ @", {{"V", "1"}}) == "exec \"$@\" --v=1 a@b1 @");
}

TEST_CASE("JSON nesting is counted as a lexer counts it", "[common][hostile]") {
  CHECK_FALSE(json_nests_deeper_than("", 0));
  CHECK_FALSE(json_nests_deeper_than("42", 0));
  CHECK(json_nests_deeper_than("[]", 0));
  CHECK_FALSE(json_nests_deeper_than("[[1], {\"a\": [2]}]", 3));
  CHECK(json_nests_deeper_than("[[1], {\"a\": [[2]]}]", 3));
  const std::string three = "{\"a\": [{\"b\": 1}]}";
  CHECK_FALSE(json_nests_deeper_than(three, 3));
  CHECK(json_nests_deeper_than(three, 2));
  // Brackets inside strings, escaped quotes and backslashes included, are text.
  CHECK_FALSE(json_nests_deeper_than(R"({"k": "[[[{{{", "q": "\"[[[", "b": "\\", "c": "]]]"})", 1));
  CHECK(json_nests_deeper_than(R"({"b": "\\", "c": [[1]]})", 2));
  // Siblings do not add up; only what is open at once counts.
  std::string wide = "[";
  for (int i = 0; i < 10000; ++i) wide += "{},";
  wide += "{}]";
  CHECK_FALSE(json_nests_deeper_than(wide, 2));
  CHECK(json_nests_deeper_than(std::string(100000, '[') + std::string(100000, ']'), 32));
}

TEST_CASE("time stamps are RFC 3339 in UTC", "[common]") {
  CHECK(rfc3339_utc(0) == "1970-01-01T00:00:00Z");
  CHECK(rfc3339_utc(1700000000) == "2023-11-14T22:13:20Z");
  CHECK(rfc3339_utc(253402300799) == "9999-12-31T23:59:59Z");
  std::string now = rfc3339_utc_now();
  REQUIRE(now.size() == 20);
  CHECK(now[10] == 'T');
  CHECK(now.back() == 'Z');
  CHECK(now >= "2026-");
}

TEST_CASE("SOURCE_DATE_EPOCH is seconds or nothing", "[common]") {
  {
    EpochEnv e(nullptr);
    CHECK_FALSE(source_date_epoch().value().has_value());
  }
  {
    EpochEnv e("");
    CHECK_FALSE(source_date_epoch().value().has_value());
  }
  {
    EpochEnv e("1700000000");
    CHECK(source_date_epoch().value() == std::optional<std::int64_t>(1700000000));
  }
  {
    EpochEnv e("0");
    CHECK(source_date_epoch().value() == std::optional<std::int64_t>(0));
  }
  for (const char* bad : {"yesterday", "-1", "+5", "17e8", "1700000000 ", "253402300800", "99999999999999999999"}) {
    EpochEnv e(bad);
    auto r = source_date_epoch();
    INFO(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == ErrorKind::Input);
    CHECK(r.error().message.find("SOURCE_DATE_EPOCH=") == 0);
    CHECK(r.error().message.find('\n') == std::string::npos);
  }
}

TEST_CASE("libarchive owners write and read a tar back", "[common]") {
  std::string tar(10240, '\0');
  size_t used = 0;
  {
    gb::detail::ArchiveWriter w(archive_write_new());
    REQUIRE(w);
    archive_write_set_format_pax_restricted(w.get());
    REQUIRE(archive_write_open_memory(w.get(), tar.data(), tar.size(), &used) == ARCHIVE_OK);
    gb::detail::ArchiveEntry e(archive_entry_new());
    archive_entry_set_pathname(e.get(), "hello.txt");
    archive_entry_set_filetype(e.get(), AE_IFREG);
    archive_entry_set_perm(e.get(), 0644);
    archive_entry_set_size(e.get(), 5);
    REQUIRE(archive_write_header(w.get(), e.get()) == ARCHIVE_OK);
    REQUIRE(archive_write_data(w.get(), "hello", 5) == 5);
    REQUIRE(archive_write_close(w.get()) == ARCHIVE_OK);
  }
  gb::detail::ArchiveReader r(archive_read_new());
  archive_read_support_format_tar(r.get());
  REQUIRE(archive_read_open_memory(r.get(), tar.data(), used) == ARCHIVE_OK);
  archive_entry* entry = nullptr;
  REQUIRE(archive_read_next_header(r.get(), &entry) == ARCHIVE_OK);
  CHECK(std::string(archive_entry_pathname(entry)) == "hello.txt");
  char buf[8] = {};
  CHECK(archive_read_data(r.get(), buf, sizeof buf) == 5);
  CHECK(std::string(buf) == "hello");
}

TEST_CASE("zstd owners compress and decompress", "[common]") {
  const std::string plain(4096, 'z');
  gb::detail::ZstdCCtx c(ZSTD_createCCtx());
  REQUIRE(c);
  std::string packed(ZSTD_compressBound(plain.size()), '\0');
  size_t n = ZSTD_compressCCtx(c.get(), packed.data(), packed.size(), plain.data(), plain.size(), 3);
  REQUIRE_FALSE(ZSTD_isError(n));
  gb::detail::ZstdDCtx d(ZSTD_createDCtx());
  REQUIRE(d);
  std::string out(plain.size(), '\0');
  size_t m = ZSTD_decompressDCtx(d.get(), out.data(), out.size(), packed.data(), n);
  REQUIRE_FALSE(ZSTD_isError(m));
  CHECK(out == plain);
}
