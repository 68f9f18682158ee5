#pragma once
// Private header: include it from .cpp files (or private headers) only,
// never from a public header (it brings in <zstd.h>). Move-only owners of
// zstd contexts, header-only, so common/ itself does not link zstd.

#include <memory>
#include <zstd.h>

namespace gb::detail {

struct ZstdCCtxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct ZstdDCtxFree {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};
using ZstdCCtx = std::unique_ptr<ZSTD_CCtx, ZstdCCtxFree>;
using ZstdDCtx = std::unique_ptr<ZSTD_DCtx, ZstdDCtxFree>;

}  // namespace gb::detail
