// Loader worker threads and glibc's malloc: a thread that is not the process's first gets its own
// malloc arena (an mmap'd heap that grows and trims in small steps), and a decode-bound worker
// building batches there was measured ~12 % slower than the same work on the main thread, which is
// why one worker lost to none (bench/loader_bench.cpp). PyTorch's DataLoader workers are
// processes, each on its own main arena; capping the process at one arena gives trainlab's worker
// threads the same allocator behaviour. Torch-free.
#pragma once

namespace trainlab {

// Caps glibc at one malloc arena (M_ARENA_MAX = 1) for the threads started from now on; called
// before a loader starts its workers. Idempotent; a no-op off glibc.
void share_one_malloc_arena();

}  // namespace trainlab
