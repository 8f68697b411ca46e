// The data-parallel gradient schedule (GradientBuckets): bucket layout, launch order, serial and
// overlap modes, unused parameters, the communication time, and many steps of gradients arriving
// on several threads while a backend thread completes the launches (the TSan stage runs this).
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>

#include "harness/dist/gradient_buckets.h"
#include "profiler/event_recorder.h"

namespace trainlab {
namespace {

using Done = std::shared_ptr<std::atomic<int64_t>>;

// What a step did, as the callbacks saw it (single-threaded tests).
struct Trace {
  std::vector<size_t> copied;
  std::vector<size_t> launched;
  std::vector<Done> stamps;
  GradientBuckets::CopyIn copy_in() {
    return [this](size_t param) { copied.push_back(param); };
  }
  GradientBuckets::Launch launch() {
    return [this](size_t bucket, int64_t launch_ns, Done done) {
      EXPECT_GT(launch_ns, 0);
      launched.push_back(bucket);
      stamps.push_back(std::move(done));
    };
  }
};

TEST(GradientBuckets, FillsBucketsInReverseParameterOrderUpToTheCap) {
  // Reverse order: 4 (4 B) | 3 (100 B, over the cap: its own) | 2 and 1 (8 + 8 = the cap) | 0.
  const GradientBuckets buckets({40, 8, 8, 100, 4}, 16);
  ASSERT_EQ(buckets.bucket_count(), 4u);
  EXPECT_EQ(buckets.params_of(0), (std::vector<size_t>{4}));
  EXPECT_EQ(buckets.params_of(1), (std::vector<size_t>{3}));
  EXPECT_EQ(buckets.params_of(2), (std::vector<size_t>{2, 1}));
  EXPECT_EQ(buckets.params_of(3), (std::vector<size_t>{0}));
  EXPECT_EQ(buckets.bytes_of(1), 100);
  EXPECT_EQ(buckets.bytes_of(2), 16);
  EXPECT_EQ(buckets.bucket_of(1), 2u);
  EXPECT_EQ(buckets.offset_bytes_of(2), 0);
  EXPECT_EQ(buckets.offset_bytes_of(1), 8);
  EXPECT_EQ(GradientBuckets({}, 16).bucket_count(), 0u);
  EXPECT_THROW(GradientBuckets({8}, 0), std::invalid_argument);
  EXPECT_THROW(GradientBuckets({-8}, 16), std::invalid_argument);
}

TEST(GradientBuckets, TheCapInBytesIsAtLeastOne) {
  EXPECT_EQ(bucket_cap_bytes(25.0), 25 * 1024 * 1024);
  EXPECT_EQ(bucket_cap_bytes(0.5), 512 * 1024);
  EXPECT_EQ(bucket_cap_bytes(1e-7), 1);  // 0.1 byte: every parameter its own bucket
  const GradientBuckets own_buckets({8, 8, 8}, bucket_cap_bytes(1e-7));
  EXPECT_EQ(own_buckets.bucket_count(), 3u);
}

TEST(GradientBuckets, UnionOfIntervalsCountsOverlapsOnce) {
  EXPECT_EQ(union_ns({}), 0);
  EXPECT_EQ(union_ns({{0, 10}, {5, 15}, {20, 25}}), 20);
  EXPECT_EQ(union_ns({{20, 25}, {0, 100}, {30, 40}}), 100);
  EXPECT_EQ(union_ns({{10, 5}}), 0);  // an end before its start adds nothing
}

TEST(GradientBuckets, OverlapLaunchesACompleteBucketOnlyAfterTheOnesBeforeIt) {
  GradientBuckets buckets({8, 8, 8}, 8);  // bucket 0 = param 2, 1 = param 1, 2 = param 0
  Trace t;
  buckets.begin_step(/*hooks_armed=*/true);
  EXPECT_TRUE(buckets.on_gradient(0, t.copy_in(), t.launch()));  // bucket 2 complete, waits for 0 and 1
  EXPECT_TRUE(t.launched.empty());
  EXPECT_TRUE(buckets.on_gradient(2, t.copy_in(), t.launch()));  // bucket 0 goes
  EXPECT_EQ(t.launched, (std::vector<size_t>{0}));
  EXPECT_FALSE(buckets.on_gradient(2, t.copy_in(), t.launch()));  // a second arrival is ignored
  EXPECT_TRUE(buckets.on_gradient(1, t.copy_in(), t.launch()));  // bucket 1, then the waiting 2
  EXPECT_EQ(t.launched, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(t.copied, (std::vector<size_t>{0, 2, 1}));
  EXPECT_TRUE(buckets.all_launched());
  buckets.finish(t.copy_in(), t.launch());  // nothing left
  EXPECT_EQ(t.launched.size(), 3u);
  EXPECT_EQ(t.copied.size(), 3u);
  EXPECT_FALSE(buckets.on_gradient(0, t.copy_in(), t.launch()));  // disarmed after finish
}

TEST(GradientBuckets, SerialModeLaunchesEverythingAtFinishInOrder) {
  GradientBuckets buckets({8, 8, 8, 8}, 16);  // bucket 0 = params 3, 2; bucket 1 = params 1, 0
  Trace t;
  buckets.begin_step(/*hooks_armed=*/false);
  EXPECT_FALSE(buckets.on_gradient(3, t.copy_in(), t.launch()));
  EXPECT_TRUE(t.copied.empty());
  EXPECT_FALSE(buckets.all_launched());
  buckets.finish(t.copy_in(), t.launch());
  EXPECT_EQ(t.copied, (std::vector<size_t>{0, 1, 2, 3}));
  EXPECT_EQ(t.launched, (std::vector<size_t>{0, 1}));
  EXPECT_TRUE(buckets.all_launched());
}

TEST(GradientBuckets, AParameterWithoutAGradientIsCopiedInAtFinish) {
  GradientBuckets buckets({8, 8}, 8);  // bucket 0 = param 1, bucket 1 = param 0
  Trace t;
  buckets.begin_step(true);
  buckets.on_gradient(0, t.copy_in(), t.launch());  // param 1 is unused this step
  EXPECT_TRUE(t.launched.empty());
  buckets.finish(t.copy_in(), t.launch());
  EXPECT_EQ(t.copied, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(t.launched, (std::vector<size_t>{0, 1}));
  // The next step starts over: nothing arrived, nothing launched.
  buckets.begin_step(true);
  EXPECT_FALSE(buckets.all_launched());
  EXPECT_TRUE(buckets.on_gradient(1, t.copy_in(), t.launch()));
  EXPECT_EQ(t.launched, (std::vector<size_t>{0, 1, 0}));
}

TEST(GradientBuckets, CommunicationTimeIsTheUnionOfThisStepsLaunches) {
  GradientBuckets buckets({8, 8}, 8);
  Trace t;
  buckets.begin_step(true);
  EXPECT_EQ(buckets.comm_ns(steady_ns()), 0);  // nothing launched
  const int64_t before_ns = steady_ns();
  buckets.finish(t.copy_in(), t.launch());
  ASSERT_EQ(t.stamps.size(), 2u);
  const int64_t after_ns = steady_ns();
  // Neither ended: both count up to `now`.
  const int64_t open_ns = buckets.comm_ns(after_ns + 1'000'000);
  EXPECT_GE(open_ns, 1'000'000);
  EXPECT_LE(open_ns, after_ns - before_ns + 1'000'000);
  t.stamps[0]->store(after_ns + 2'000'000);
  t.stamps[1]->store(after_ns + 3'000'000);
  const int64_t closed_ns = buckets.comm_ns(after_ns + 50'000'000);  // `now` no longer counts
  EXPECT_GE(closed_ns, 3'000'000);
  EXPECT_LE(closed_ns, after_ns - before_ns + 3'000'000);

  // A completion of the last step that lands late does not touch this one: each launch has its own stamp.
  buckets.begin_step(true);
  const int64_t step2_ns = steady_ns();
  buckets.finish(t.copy_in(), t.launch());
  ASSERT_EQ(t.stamps.size(), 4u);
  t.stamps[2]->store(steady_ns());
  t.stamps[3]->store(steady_ns());
  const int64_t step2_end_ns = steady_ns();
  t.stamps[0]->store(step2_end_ns + 10'000'000'000);  // the old launch's callback, 10 s "late"
  EXPECT_LE(buckets.comm_ns(step2_end_ns), step2_end_ns - step2_ns);
}

// A backend: launches queue up; a worker thread completes them in order, waking the waiter first
// and stamping the end afterwards (as c10's futures run their callbacks after waking waiters).
class FakeBackend {
 public:
  FakeBackend() : worker_([this] { run(); }) {}
  ~FakeBackend() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    worker_.join();
  }
  void launch(size_t bucket, Done done) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      queue_.emplace_back(bucket, std::move(done));
      ++launched_;
    }
    wake_.notify_all();
  }
  // Blocks until every launch so far has completed (the buckets' work->wait()).
  void wait_all() {
    std::unique_lock<std::mutex> lock(mutex_);
    completed_cv_.wait(lock, [this] { return completed_ == launched_; });
  }

 private:
  void run() {
    std::mt19937 jitter(7);
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_ && queue_.empty()) return;
      auto [bucket, done] = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(jitter() % 50));  // the all-reduce
      lock.lock();
      ++completed_;
      completed_cv_.notify_all();
      lock.unlock();
      done->store(steady_ns());  // the callback, after the waiter may already have gone on
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, completed_cv_;
  std::deque<std::pair<size_t, Done>> queue_;
  size_t launched_ = 0, completed_ = 0;
  bool stop_ = false;
  std::thread worker_;  // last: starts after the members it uses
};

TEST(GradientBuckets, GradientsFromSeveralThreadsLaunchEveryBucketOnceInOrderEveryStep) {
  constexpr size_t kParams = 64, kThreads = 4, kSteps = 150;
  std::mt19937 rng(11);
  std::vector<int64_t> param_bytes(kParams);
  for (int64_t& bytes : param_bytes) bytes = 4 * static_cast<int64_t>(1 + rng() % 64);
  GradientBuckets buckets(param_bytes, 256);
  const size_t bucket_count = buckets.bucket_count();
  ASSERT_GT(bucket_count, 4u);

  // Plain (non-atomic) state touched only from the callbacks: the schedule's lock must guard it.
  std::vector<size_t> copies(kParams, 0);
  std::vector<size_t> launch_order;
  size_t step = 0;
  bool launch_saw_missing_gradient = false;
  FakeBackend backend;
  const GradientBuckets::CopyIn copy_in = [&](size_t param) { ++copies[param]; };
  const GradientBuckets::Launch launch = [&](size_t bucket, int64_t /*launch_ns*/, Done done) {
    for (size_t param : buckets.params_of(bucket)) launch_saw_missing_gradient |= copies[param] != step + 1;
    launch_order.push_back(bucket);
    backend.launch(bucket, std::move(done));
  };

  std::vector<size_t> order(kParams);
  std::iota(order.begin(), order.end(), 0);
  for (step = 0; step < kSteps; ++step) {
    const bool overlap = step % 5 != 4;  // every fifth step serial
    buckets.begin_step(overlap);
    std::shuffle(order.begin(), order.end(), rng);
    const size_t unused = order.back();  // one parameter has no gradient this step
    const int64_t step_start_ns = steady_ns();
    std::vector<std::thread> hooks;
    for (size_t t = 0; t < kThreads; ++t) {
      hooks.emplace_back([&, t] {
        for (size_t k = t; k + 1 < kParams; k += kThreads) buckets.on_gradient(order[k], copy_in, launch);
      });
    }
    for (std::thread& h : hooks) h.join();
    buckets.finish(copy_in, launch);
    ASSERT_TRUE(buckets.all_launched());
    backend.wait_all();
    const int64_t step_end_ns = steady_ns();
    const int64_t comm_ns = buckets.comm_ns(step_end_ns);
    EXPECT_GT(comm_ns, 0);
    EXPECT_LE(comm_ns, step_end_ns - step_start_ns);
    EXPECT_FALSE(buckets.on_gradient(unused, copy_in, launch));  // disarmed
  }
  EXPECT_FALSE(launch_saw_missing_gradient);
  for (size_t param = 0; param < kParams; ++param) EXPECT_EQ(copies[param], kSteps) << "param " << param;
  ASSERT_EQ(launch_order.size(), kSteps * bucket_count);
  for (size_t k = 0; k < launch_order.size(); ++k) ASSERT_EQ(launch_order[k], k % bucket_count) << "launch " << k;
}

}  // namespace
}  // namespace trainlab
