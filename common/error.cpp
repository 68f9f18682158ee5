#include "common/error.hpp"

namespace gb {

int exit_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Input: return 2;
    case ErrorKind::Failed: return 1;
  }
  return 1;
}

}  // namespace gb
