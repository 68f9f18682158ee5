#include "bundles/zstd_decode.hpp"

#include "bundles/bundle.hpp"

namespace gb::bundles::detail {

namespace {
constexpr std::size_t k_head = k_zstd_frame_header_max;
// A window larger than the largest content allowed is never needed.
constexpr int k_window_log_max = 24;
static_assert((std::uint64_t{1} << k_window_log_max) >= k_max_zstd_content);
}  // namespace

ZstdDecoder::ZstdDecoder() : m_ctx(ZSTD_createDCtx()), m_out(ZSTD_DStreamOutSize(), '\0') {
  if (m_ctx) ZSTD_DCtx_setParameter(m_ctx.get(), ZSTD_d_windowLogMax, k_window_log_max);
}

void ZstdDecoder::reset() {
  if (m_ctx) ZSTD_DCtx_reset(m_ctx.get(), ZSTD_reset_session_only);
  m_head.clear();
  m_known = false;
  m_declared = m_decoded = 0;
  m_last = 0;
}

Result<std::uint64_t> ZstdDecoder::declared_size(std::string_view head) {
  unsigned long long n = ZSTD_getFrameContentSize(head.data(), head.size());
  if (n == ZSTD_CONTENTSIZE_ERROR) return op_error("zstd: not a zstd frame");
  if (n == ZSTD_CONTENTSIZE_UNKNOWN) return op_error("zstd: the frame does not declare its content size");
  if (n > k_max_zstd_content)
    return op_error("zstd: the frame declares " + std::to_string(n) + " bytes, more than the " + std::to_string(k_max_zstd_content) +
                    " a zstd entry may hold");
  return static_cast<std::uint64_t>(n);
}

Result<void> ZstdDecoder::feed(std::string_view stored, const Sink& out) {
  if (!m_ctx) return op_error("zstd: out of memory");
  if (!m_known) {
    std::size_t take = std::min(k_head - m_head.size(), stored.size());
    m_head.append(stored.substr(0, take));
    stored.remove_prefix(take);
    if (m_head.size() < k_head) return {};
    auto n = declared_size(m_head);
    if (!n) return n.error();
    m_declared = *n;
    m_known = true;
    if (auto r = decode(m_head, out); !r) return r;
  }
  return decode(stored, out);
}

Result<void> ZstdDecoder::finish(const Sink& out) {
  if (!m_known) {  // shorter than a full header
    auto n = declared_size(m_head);
    if (!n) return n.error();
    m_declared = *n;
    m_known = true;
    if (auto r = decode(m_head, out); !r) return r;
  }
  if (m_last != 0) return op_error("zstd: the frame is cut short");
  if (m_decoded != m_declared)
    return op_error("zstd: decoded " + std::to_string(m_decoded) + " bytes, the frame declares " + std::to_string(m_declared));
  return {};
}

Result<void> ZstdDecoder::decode(std::string_view in, const Sink& out) {
  ZSTD_inBuffer ib{in.data(), in.size(), 0};
  bool full = false;  // a full output buffer may leave decoded bytes inside zstd
  while (ib.pos < ib.size || full) {
    ZSTD_outBuffer ob{m_out.data(), m_out.size(), 0};
    m_last = ZSTD_decompressStream(m_ctx.get(), &ob, &ib);
    if (ZSTD_isError(m_last)) return op_error(std::string("zstd: ") + ZSTD_getErrorName(m_last));
    full = ob.pos == ob.size;
    m_decoded += ob.pos;
    if (m_decoded > m_declared)
      return op_error("zstd: expands past the " + std::to_string(m_declared) + " bytes its frame declares");
    if (ob.pos)
      if (auto r = out(std::string_view(m_out.data(), ob.pos)); !r) return r;
  }
  return {};
}

}  // namespace gb::bundles::detail
