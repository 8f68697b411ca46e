// mallopt(M_ARENA_MAX, 1), once.
#include "harness/loader/malloc_arena.h"

#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace trainlab {

void share_one_malloc_arena() {
#if defined(__GLIBC__)
  static std::once_flag once;
  std::call_once(once, [] { mallopt(M_ARENA_MAX, 1); });
#endif
}

}  // namespace trainlab
