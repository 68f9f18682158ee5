#pragma once
// Idle transfer handles by origin, for the transports. libcurl keeps a
// handle's connection open after a transfer; a transfer takes the handle
// that last talked to its origin, so a run opens about as many connections
// to a host as it runs transfers to it at once, however many origins it
// talks to (a registry, its token service, the storage its blobs redirect
// to). A handle never moves to another origin, where its open connection
// would sit unused while the next transfer to its own origin opens another.
// At most max_idle handles wait; past that the one that waited longest is
// dropped (closing its connection). Thread-safe.

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gb::net {

template <typename Handle>
class HandlePool {
public:
  explicit HandlePool(std::size_t max_idle = 64) : m_max_idle(max_idle) {}

  // The handle that `origin` gave back last, or nullopt: make a new one.
  std::optional<Handle> take(const std::string& origin) {
    std::lock_guard lock(m_mutex);
    for (std::size_t i = m_idle.size(); i-- > 0;)
      if (m_idle[i].origin == origin) {
        Handle h = std::move(m_idle[i].handle);
        m_idle.erase(m_idle.begin() + static_cast<std::ptrdiff_t>(i));
        return h;
      }
    return std::nullopt;
  }

  // A handle done with a transfer to `origin`, its connection there open.
  void give(std::string origin, Handle h) {
    std::optional<Handle> dropped;  // closed after the lock is released
    std::lock_guard lock(m_mutex);
    m_idle.push_back({std::move(origin), std::move(h)});
    if (m_idle.size() > m_max_idle) {
      dropped = std::move(m_idle.front().handle);
      m_idle.erase(m_idle.begin());
    }
  }

  std::size_t idle() const {
    std::lock_guard lock(m_mutex);
    return m_idle.size();
  }

  void clear() {
    std::vector<Idle> gone;
    std::lock_guard lock(m_mutex);
    gone.swap(m_idle);
  }

private:
  struct Idle {
    std::string origin;
    Handle handle;
  };
  std::size_t m_max_idle;
  mutable std::mutex m_mutex;
  std::vector<Idle> m_idle;  // the longest idle first
};

}  // namespace gb::net
