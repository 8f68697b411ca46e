// A plain LibTorch training loop (a small MLP on synthetic data) profiled through trainlab's
// embedding API: a Session for the run, a StepScope per step, Annotate scopes around the loop's
// own parts. Writes a Chrome trace (Perfetto, chrome://tracing, `trainlab diagnose` later) and
// prints the annotations summarised like phases.
//
//   embed_loop TRACE_PATH [STEPS] [WINDOW_START] [WINDOW_STEPS]
#include <torch/torch.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "profiler/annotate.h"
#include "profiler/chrome_trace.h"
#include "profiler/profile_summary.h"
#include "profiler/session.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: embed_loop TRACE_PATH [STEPS] [WINDOW_START] [WINDOW_STEPS]\n");
    return 2;
  }
  const std::string trace_path = argv[1];
  const int steps = argc > 2 ? std::atoi(argv[2]) : 12;

  trainlab::SessionOptions options;
  options.window_start_step = argc > 3 ? std::atoi(argv[3]) : 3;
  options.window_steps = argc > 4 ? std::atoi(argv[4]) : 5;
  options.sample_interval_ms = 50;
  options.capture_device = torch::cuda::is_available();
  trainlab::Session profiler(options);

  torch::manual_seed(0);
  torch::nn::Sequential model(torch::nn::Linear(256, 512), torch::nn::ReLU(), torch::nn::Linear(512, 10));
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01));
  for (int step = 0; step < steps; ++step) {
    trainlab::StepScope step_scope(profiler);
    torch::Tensor x, y;
    {
      trainlab::Annotate scope("load_batch");
      x = torch::randn({128, 256});
      y = torch::randint(0, 10, {128});
    }
    torch::Tensor loss;
    {
      trainlab::Annotate scope("forward");
      loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    }
    {
      trainlab::Annotate scope("backward");
      loss.backward();
    }
    {
      trainlab::Annotate scope("optimizer");
      optimizer.step();
      optimizer.zero_grad();
    }
  }

  const trainlab::Profile profile = profiler.finish();
  const int64_t bytes = trainlab::write_chrome_trace(trace_path, profile, {{"program", "embed_loop"}}, ::getpid());
  std::printf("trace %s: %zu events, %lld bytes, %lld steps captured\n", trace_path.c_str(), profile.events.size(),
              static_cast<long long>(bytes), static_cast<long long>(profiler.steps_captured()));
  for (const trainlab::SpanSummary& s : trainlab::summarise_spans(profile, trainlab::EventKind::kAnnotation)) {
    std::printf("  %-12s %3lld x  %8.3f ms per step  %5.1f %% of the step\n", s.name.c_str(),
                static_cast<long long>(s.count), s.per_step_ns / 1e6, s.step_share_pct);
  }
  for (const std::string& note : profile.notes) std::printf("  note: %s\n", note.c_str());
  return 0;
}
