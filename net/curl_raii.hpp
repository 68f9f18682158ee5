#pragma once
// Private to net/: move-only owners for libcurl handles. Only .cpp files
// include this header, so CURL types never reach a public one.

#include <curl/curl.h>

#include <string>
#include <utility>

namespace gb::net {

template <typename T, void (*Free)(T*)>
class Owned {
public:
  Owned() = default;
  explicit Owned(T* p) : m_p(p) {}
  Owned(Owned&& o) noexcept : m_p(std::exchange(o.m_p, nullptr)) {}
  Owned& operator=(Owned&& o) noexcept {
    if (this != &o) {
      reset();
      m_p = std::exchange(o.m_p, nullptr);
    }
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() { reset(); }
  T* get() const { return m_p; }
  explicit operator bool() const { return m_p != nullptr; }
  void reset() {
    if (m_p) Free(m_p);
    m_p = nullptr;
  }
  T* release() { return std::exchange(m_p, nullptr); }

private:
  T* m_p = nullptr;
};

inline void free_easy(CURL* c) { curl_easy_cleanup(c); }
inline void free_share(CURLSH* s) { curl_share_cleanup(s); }
inline void free_slist(curl_slist* l) { curl_slist_free_all(l); }

using Easy = Owned<CURL, free_easy>;
using Share = Owned<CURLSH, free_share>;

// A header list that grows by append().
class HeaderList {
public:
  void append(const std::string& line) {
    // curl_slist_append keeps the head it was given (or makes one for an
    // empty list); on failure the old list is untouched.
    if (curl_slist* head = curl_slist_append(m_list.get(), line.c_str())) {
      m_list.release();
      m_list = List(head);
    }
  }
  curl_slist* get() const { return m_list.get(); }

private:
  using List = Owned<curl_slist, free_slist>;
  List m_list;
};

}  // namespace gb::net
