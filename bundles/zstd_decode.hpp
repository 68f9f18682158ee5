#pragma once
// Private to bundles/: decodes one zstd-encoded bundle entry in chunks,
// bounded. The frame must declare its content size, at most
// k_max_zstd_content (the writer's ZSTD_compress always does), and decoding
// stops with an error the moment it passes that size: a small entry cannot
// expand into gigabytes of memory or minutes of work.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <zstd.h>

#include "common/error.hpp"
#include "common/zstd_raii.hpp"

namespace gb::bundles::detail {

// Bytes that always hold a frame header (ZSTD_FRAMEHEADERSIZE_MAX, which
// zstd.h declares only for static linking).
inline constexpr std::size_t k_zstd_frame_header_max = 18;

class ZstdDecoder {
public:
  ZstdDecoder();
  using Sink = std::function<Result<void>(std::string_view)>;
  // Stored bytes in, in order; decoded chunks out.
  Result<void> feed(std::string_view stored, const Sink& out);
  // After the last stored byte: the frame is complete and as long as it said.
  Result<void> finish(const Sink& out);
  void reset();
  std::uint64_t declared() const { return m_declared; }

  // The content size a stored frame starting with `head` declares, checked
  // against the limit.
  static Result<std::uint64_t> declared_size(std::string_view head);

private:
  Result<void> decode(std::string_view in, const Sink& out);
  gb::detail::ZstdDCtx m_ctx;
  std::string m_head;  // the frame header, until the declared size is known
  std::string m_out;
  bool m_known = false;
  std::uint64_t m_declared = 0;
  std::uint64_t m_decoded = 0;
  std::size_t m_last = 0;  // ZSTD_decompressStream's last hint: 0 at a frame's end
};

}  // namespace gb::bundles::detail
