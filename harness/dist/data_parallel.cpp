// DataParallel: TCPStore + ProcessGroupGloo (CPU) or ProcessGroupNCCL (CUDA, where the build found
// nccl.h); which gradient goes where and when a bucket launches is GradientBuckets' schedule
// (torch-free, tested under TSan); this file holds the tensors and the collectives.
//
// Timing. Gloo completes its work on the host: a future callback stamps each bucket's end, and
// the step's communication time is known when finish_gradients() returns. NCCL runs on its own
// CUDA stream and finish_gradients() only makes the compute stream wait for it (no host
// synchronisation is added); a poller thread stamps, for every launch, when the event recorded
// before it completes (the gradients are ready, the all-reduce can start) and when the work
// reports completion, and resolve_comm_ns() hands the per-step figures over after the loop.
#include "harness/dist/data_parallel.h"
#include "harness/dist/gradient_buckets.h"
#include "harness/dist/watchdog.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/torch.h>
#ifdef TRAINLAB_HAVE_NCCL
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "profiler/event_recorder.h"

namespace trainlab {
namespace {

// A bucket's flat buffer (one dtype: the first parameter's) and its all-reduce of this step.
struct BucketBuffer {
  at::Tensor flat;
  c10::intrusive_ptr<c10d::Work> work;
};

#ifdef TRAINLAB_HAVE_NCCL
// One NCCL all-reduce in flight, watched by the poller.
struct DeviceLaunch {
  int64_t step = 0;
  int64_t bucket = 0;
  int64_t bytes = 0;
  c10::intrusive_ptr<c10d::Work> work;
  std::shared_ptr<at::cuda::CUDAEvent> ready;  // recorded on the compute stream just before the launch
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// Polls the launches' events and works (every 20 us while any is in flight; asleep otherwise).
class DevicePoller {
 public:
  DevicePoller() : thread_([this] { loop(); }) {}
  ~DevicePoller() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  void watch(DeviceLaunch launch) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      pending_.push_back(std::move(launch));
    }
    wake_.notify_all();
  }
  // Blocks until every launch so far has completed (after the timed loop), then hands them over.
  std::vector<DeviceLaunch> drain() {
    std::unique_lock<std::mutex> lock(mutex_);
    drained_.wait(lock, [this] { return pending_.empty(); });
    std::vector<DeviceLaunch> out = std::move(done_);
    done_.clear();
    return out;
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [this] { return stop_ || !pending_.empty(); });
      if (stop_) return;
      const int64_t now = steady_ns();
      for (DeviceLaunch& l : pending_) {
        if (l.start_ns == 0 && l.ready->query()) l.start_ns = now;
        if (l.start_ns != 0 && l.end_ns == 0 && l.work->isCompleted()) {
          l.end_ns = now;
          if (EventRecorder::instance().enabled()) {
            const nlohmann::json args = {{"bucket", l.bucket}, {"bytes", l.bytes}};
            EventRecorder::instance().record(EventKind::kCpuOp, "nccl:all_reduce", l.start_ns, l.end_ns, &args);
          }
        }
      }
      while (!pending_.empty() && pending_.front().end_ns != 0) {
        done_.push_back(std::move(pending_.front()));
        pending_.pop_front();
      }
      if (pending_.empty()) {
        drained_.notify_all();
        continue;
      }
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, drained_;
  std::deque<DeviceLaunch> pending_;
  std::vector<DeviceLaunch> done_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after the members it uses
};
#endif

// Where Gloo listens: the interface GLOO_SOCKET_IFNAME names (as torch.distributed reads it), else
// loopback for a loopback rendezvous, else this machine's address toward MASTER_ADDR (the
// hostname may resolve to an address the job's network does not carry).
std::shared_ptr<::gloo::transport::Device> gloo_device(const DistEnv& env) {
  if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME"); interface != nullptr && interface[0] != '\0') {
    return c10d::ProcessGroupGloo::createDeviceForInterface(interface);
  }
  if (env.master_addr == "127.0.0.1" || env.master_addr == "localhost") {
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  }
  const std::string local = local_address_toward(env.master_addr);
  return local.empty() ? c10d::ProcessGroupGloo::createDefaultDevice()
                       : c10d::ProcessGroupGloo::createDeviceForHostname(local);
}

}  // namespace

struct DataParallel::State {
  DistEnv env;
  CommMode mode = CommMode::kOverlap;
  int64_t bucket_bytes_cap = 0;
  std::chrono::milliseconds timeout{0};
  c10::intrusive_ptr<c10d::Store> store;
  std::string backend;  // "gloo" or "nccl"
  c10::intrusive_ptr<c10d::Backend> group;
  int64_t step_index = -1;  // begin_step() calls so far, minus one
#ifdef TRAINLAB_HAVE_NCCL
  std::unique_ptr<DevicePoller> poller;  // NCCL only
#endif
  std::vector<at::Tensor> params;
  std::unique_ptr<GradientBuckets> schedule;
  std::vector<BucketBuffer> buffers;   // one per bucket of the schedule
  std::vector<unsigned> hook_handles;  // overlap mode: one gradient hook per parameter
  CommStepStats last;

  std::string who() const { return "rank " + std::to_string(env.rank) + " of " + std::to_string(env.world_size); }

  // The view of parameter `param` in its bucket's buffer.
  at::Tensor slot_of(size_t param) {
    const at::Tensor& p = params[param];
    const int64_t offset = schedule->offset_bytes_of(param) / static_cast<int64_t>(p.element_size());
    return buffers[schedule->bucket_of(param)].flat.narrow(0, offset, p.numel());
  }

  void copy_in(size_t param, const at::Tensor& grad) {
    at::Tensor dst = slot_of(param);
    if (grad.defined()) {
      dst.copy_(grad.reshape(-1));
    } else {
      dst.zero_();  // a parameter without a gradient this step contributes zeros
    }
  }

  // Starts bucket `index`'s all-reduce (under the schedule's lock, in bucket order); its trace
  // span starts at the schedule's launch stamp, the same one the step's communication time uses.
  void launch(size_t index, int64_t launch_ns, std::shared_ptr<std::atomic<int64_t>> done) {
    BucketBuffer& b = buffers[index];
    const int64_t bytes = static_cast<int64_t>(b.flat.numel() * b.flat.element_size());
    std::vector<at::Tensor> tensors{b.flat};
#ifdef TRAINLAB_HAVE_NCCL
    if (poller) {
      auto ready = std::make_shared<at::cuda::CUDAEvent>();
      ready->record(c10::cuda::getCurrentCUDAStream());
      b.work = group->allreduce(tensors);
      poller->watch(DeviceLaunch{step_index, static_cast<int64_t>(index), bytes, b.work, ready});
      return;
    }
#endif
    b.work = group->allreduce(tensors);
    const int64_t bucket_index = static_cast<int64_t>(index);
    b.work->getFuture()->addCallback([done, launch_ns, bytes, bucket_index](c10::ivalue::Future&) {
      const int64_t end_ns = steady_ns();
      done->store(end_ns);
      if (EventRecorder::instance().enabled()) {
        const nlohmann::json args = {{"bucket", bucket_index}, {"bytes", bytes}};
        EventRecorder::instance().record(EventKind::kCpuOp, "gloo:all_reduce", launch_ns, end_ns, &args);
      }
    });
  }

  GradientBuckets::CopyIn copy_in_grad_of_param() {
    return [this](size_t param) { copy_in(param, params[param].grad()); };
  }
  GradientBuckets::Launch launcher() {
    return [this](size_t bucket, int64_t launch_ns, std::shared_ptr<std::atomic<int64_t>> done) {
      launch(bucket, launch_ns, std::move(done));
    };
  }
};

DataParallel::DataParallel(const DistEnv& env, std::vector<at::Tensor> parameters, CommMode mode,
                           int64_t bucket_bytes, std::chrono::milliseconds timeout)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.env = env;
  s.mode = mode;
  s.bucket_bytes_cap = bucket_bytes;
  s.timeout = timeout;
  // c10d's own timeout does not cover a store client whose peer never answers (MASTER_PORT is some
  // other service): the whole rendezvous gets the timeout, plus a little for c10d's own message.
  const Watchdog rendezvous_deadline(
      timeout + std::chrono::seconds(5),
      "data parallel rendezvous did not complete on rank " + std::to_string(env.rank) + " at " + env.master_addr +
          ":" + std::to_string(env.master_port) + " within " + std::to_string(timeout.count() / 1000) +
          " s (--dist-timeout-s): is that port the rendezvous of this job, and are all ranks started?");
  try {
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<std::uint16_t>(env.master_port);
    store_options.isServer = env.rank == 0;
    store_options.numWorkers = static_cast<std::size_t>(env.world_size);
    store_options.waitWorkers = true;
    store_options.timeout = timeout;
    // Under torchrun (TORCHELASTIC_USE_AGENT_STORE) the agent already serves this port and c10d
    // makes rank 0 a client of it; that store lives on after this child, hence the prefix.
    s.store = c10::make_intrusive<c10d::PrefixStore>(
        env.store_prefix, c10::make_intrusive<c10d::TCPStore>(env.master_addr, store_options));
    const bool on_cuda = !parameters.empty() && parameters.front().is_cuda();
#ifdef TRAINLAB_HAVE_NCCL
    if (on_cuda) {
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = timeout;
      s.group = c10::make_intrusive<c10d::ProcessGroupNCCL>(s.store, env.rank, env.world_size, options);
      s.backend = "nccl";
      s.poller = std::make_unique<DevicePoller>();
    }
#else
    if (on_cuda) {
      std::cerr << "trainlab: NCCL was not found at build time; gradients on CUDA go through Gloo (staged via the host)\n";
    }
#endif
    if (!s.group) {
      auto options = c10d::ProcessGroupGloo::Options::create(timeout);
      options->devices.push_back(gloo_device(env));
      s.group = c10::make_intrusive<c10d::ProcessGroupGloo>(s.store, env.rank, env.world_size, options);
      s.backend = "gloo";
    }
  } catch (const std::exception& e) {
    const std::string what = e.what();
    throw std::runtime_error("data parallel rendezvous failed on " + s.who() + " at " + env.master_addr + ":" +
                             std::to_string(env.master_port) + " within " + std::to_string(timeout.count() / 1000) +
                             " s: " + what.substr(0, what.find('\n')));
  }

  // Buckets in reverse parameter order, each up to the byte cap (a larger tensor gets its own).
  s.params = std::move(parameters);
  std::vector<int64_t> param_bytes;
  for (const at::Tensor& p : s.params) param_bytes.push_back(p.numel() * static_cast<int64_t>(p.element_size()));
  s.schedule = std::make_unique<GradientBuckets>(param_bytes, bucket_bytes);
  for (size_t bucket = 0; bucket < s.schedule->bucket_count(); ++bucket) {
    const at::Tensor& first = s.params[s.schedule->params_of(bucket).front()];
    const int64_t numel = s.schedule->bytes_of(bucket) / static_cast<int64_t>(first.element_size());
    s.buffers.push_back({torch::zeros({numel}, first.options()), {}});
  }
  if (mode == CommMode::kOverlap) {
    State* state = state_.get();
    for (size_t k = 0; k < s.params.size(); ++k) {
      s.hook_handles.push_back(s.params[k].register_hook([state, k](const at::Tensor& grad) {
        state->schedule->on_gradient(
            k, [state, &grad](size_t param) { state->copy_in(param, grad); }, state->launcher());
      }));
    }
  }
}

DataParallel::~DataParallel() {
  // The hooks point at this object; the parameters (owned by the model) may outlive it.
  for (size_t k = 0; k < state_->hook_handles.size(); ++k) state_->params[k].remove_hook(state_->hook_handles[k]);
}

void DataParallel::broadcast_parameters() {
  torch::NoGradGuard no_grad;
  for (at::Tensor& p : state_->params) {
    std::vector<at::Tensor> tensors{p.detach()};
    auto work = state_->group->broadcast(tensors, c10d::BroadcastOptions{0});
    if (!work->wait(state_->timeout)) throw std::runtime_error("parameter broadcast timed out on " + state_->who());
  }
}

void DataParallel::begin_step() {
  State& s = *state_;
  for (BucketBuffer& b : s.buffers) b.work.reset();
  s.schedule->begin_step(/*hooks_armed=*/s.mode == CommMode::kOverlap);
  ++s.step_index;
}

void DataParallel::finish_gradients() {
  State& s = *state_;
  // Serial mode: every gradient now; overlap: those that never arrived (unused parameters).
  s.schedule->finish(s.copy_in_grad_of_param(), s.launcher());
  CommStepStats stats;
  for (BucketBuffer& b : s.buffers) {
    // Gloo: blocks until the bucket is reduced. NCCL: makes the compute stream wait for it (no
    // host synchronisation); a peer that fails is caught by NCCL's watchdog within the timeout.
    try {
      if (!b.work->wait(s.timeout)) throw std::runtime_error("timed out");
    } catch (const std::exception& e) {
      const std::string what = e.what();
      throw std::runtime_error("gradient all-reduce failed on " + s.who() + " (a peer died or stalled?): " +
                               what.substr(0, what.find('\n')));
    }
    b.flat.div_(s.env.world_size);
    stats.bytes += b.flat.numel() * b.flat.element_size();
    ++stats.buckets;
  }
  // Communication time: the union of the buckets' intervals (NCCL: resolve_comm_ns(), later).
  if (!comm_resolved_later()) stats.comm_ns = s.schedule->comm_ns(steady_ns());
  {
    torch::NoGradGuard no_grad;
    for (size_t k = 0; k < s.params.size(); ++k) {
      at::Tensor& p = s.params[k];
      at::Tensor averaged = s.slot_of(k).view(p.sizes());
      if (p.grad().defined()) {
        p.mutable_grad().copy_(averaged);
      } else {
        p.mutable_grad() = averaged.clone();
      }
    }
  }
  s.last = stats;
}

bool DataParallel::comm_resolved_later() const {
#ifdef TRAINLAB_HAVE_NCCL
  return state_->poller != nullptr;
#else
  return false;
#endif
}

std::vector<int64_t> DataParallel::resolve_comm_ns() {
  std::vector<int64_t> per_step(static_cast<size_t>(state_->step_index + 1), 0);
#ifdef TRAINLAB_HAVE_NCCL
  if (state_->poller) {
    std::vector<std::vector<std::pair<int64_t, int64_t>>> spans(per_step.size());
    for (const DeviceLaunch& l : state_->poller->drain()) spans[static_cast<size_t>(l.step)].emplace_back(l.start_ns, l.end_ns);
    for (size_t k = 0; k < spans.size(); ++k) per_step[k] = union_ns(std::move(spans[k]));
  }
#endif
  return per_step;
}

const CommStepStats& DataParallel::last_step() const { return state_->last; }

void DataParallel::barrier() {
  auto work = state_->group->barrier();
  if (!work->wait(state_->timeout)) throw std::runtime_error("barrier timed out on " + state_->who());
}

int64_t DataParallel::agree_clock_base_epoch_ns(int64_t own_start_epoch_ns) {
  State& s = *state_;
  const std::string prefix = "trainlab/clock_start_epoch_ns/";
  const std::string mine = std::to_string(own_start_epoch_ns);
  s.store->set(prefix + std::to_string(s.env.rank), std::vector<uint8_t>(mine.begin(), mine.end()));
  int64_t earliest = own_start_epoch_ns;
  for (int rank = 0; rank < s.env.world_size; ++rank) {
    const std::vector<uint8_t> value = s.store->get(prefix + std::to_string(rank));  // waits for that rank
    earliest = std::min(earliest, static_cast<int64_t>(std::stoll(std::string(value.begin(), value.end()))));
  }
  constexpr int64_t kNsPerS = 1000000000;
  return earliest - earliest % kNsPerS;
}

void DataParallel::store_put(const std::string& key, const std::string& bytes) {
  state_->store->set(key, std::vector<uint8_t>(bytes.begin(), bytes.end()));
}

std::optional<std::string> DataParallel::store_take(const std::string& key, std::chrono::milliseconds timeout) {
  try {
    state_->store->wait({key}, timeout);
  } catch (const std::exception&) {  // c10d says a timeout by throwing
    return std::nullopt;
  }
  const std::vector<uint8_t> value = state_->store->get(key);
  state_->store->deleteKey(key);  // a launcher's store keeps what is left in it
  return std::string(value.begin(), value.end());
}

DistributedRun DataParallel::describe() const {
  DistributedRun group;
  for (const at::Tensor& p : state_->params) group.gradient_bytes += p.numel() * p.element_size();
  group.backend = state_->backend;
  group.world_size = state_->env.world_size;
  group.rank = state_->env.rank;
  group.comm_mode = to_string(state_->mode);
  group.bucket_bytes_cap = state_->bucket_bytes_cap;
  group.buckets = static_cast<int64_t>(state_->buffers.size());
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) group.host = host;
  group.node_rank = state_->env.node_rank;
  group.local_rank = state_->env.local_rank;
  group.local_world_size = state_->env.local_world_size;
  return group;
}

}  // namespace trainlab
