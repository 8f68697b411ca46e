// What the rules share: step counts, system metrics, step lists, the user's words for an action,
// what the trace or the run record shows already in place, and the Finding every rule starts from.
#pragma once

#include <cstddef>
#include <optional>

#include "diagnostics/rules.h"

namespace trainlab::rules {

// The measured steps: the step distribution's count, else the length of the step series.
int64_t step_count(const Summary& s);

// The shares are meaningful only when steps were measured.
bool has_steps(const Summary& s);

// A system metric with at least one sample, or nullptr.
const Distribution* metric(const Summary& s, const std::string& name);

// Device utilisation samples: gpu0.util_pct, else the first gpu<N>.util_pct (a rank on another GPU).
const Distribution* gpu_util(const Summary& s, std::string* name);

// The step number of the i-th measured step (its index when the numbers are missing).
int64_t step_number(const Summary& s, size_t i);

std::string list_steps(const Summary& s, const std::vector<size_t>& indices, size_t at_most = 10);

double sum(const std::vector<double>& values);

// Actions in the user's language: PyTorch's own knobs for an imported trace (the user runs PyTorch),
// trainlab's flags for a trainlab run (the user can rerun it with them).
std::string in_users_words(const Summary& s, const std::string& trainlab_words, const std::string& pytorch_words);

// --- What the trace or the run record shows already in place (diagnostics/in_place.h): an action
// never proposes it again, and says what it read.

// A torch.compile'd model (the trace's compiled regions) or a --compiled on run.
bool compiled_in_place(const Summary& s);

// "the trace enters 2 Torch-Compiled Region spans per step" / "the run is compiled (--compiled on, inductor)".
std::string compiled_evidence(const Summary& s);

// More than one compiled region per step: graph breaks (or submodules compiled one by one).
bool graph_breaks(const Summary& s);

// What is left once the model is compiled: fewer graph breaks, CUDA graphs on GPU (unless the trace
// already launches graphs), more of the step inside the compiled region.
std::string after_compiling(const Summary& s, const Thresholds& t);

// DDP-style overlap already on: collectives launched while backward runs (the trace), most of the
// collective time hidden under compute (a device timeline), or a run with --comm-mode overlap.
bool overlap_in_place(const Summary& s, const Thresholds& t);

std::string overlap_evidence(const Summary& s, const Thresholds& t);

// DDP's hooks launch the collectives while backward runs, yet the device timeline shows most of their
// time exposed: launched early is not hidden (they queue behind each other, or the step waits on them).
bool launched_in_backward_but_exposed(const Summary& s, const Thresholds& t);

// Collective calls per step: the loop's launches from the trace, else the trace's collective args.
std::optional<double> collective_calls(const Summary& s);

// DataLoader worker processes already on: the record's count, or the trace's iterator.
bool workers_in_place(const Summary& s);

std::string workers_evidence(const Summary& s);

bool pinned_in_place(const Summary& s);

double model_syncs_per_step(const Summary& s);

// Host syncs mostly inside the model's own modules (a trace with module scopes): they are the model's
// code, not the user's loop. "aten::item in Gate (8 per step), aten::item in Embed (1 per step)".
bool syncs_in_model(const Summary& s);

std::string model_sync_sites(const Summary& s);

std::string model_sync_advice(const Summary& s);

// The ranks that share this rank's machine: a job across machines says how many (LOCAL_WORLD_SIZE);
// otherwise every rank ran here (--nproc, torchrun on one machine).
int ranks_here(const Summary& s);

// Ranks x intra-op threads above the machine's cores, on CPU: every rank's GEMMs wait for threads
// the other ranks on the machine hold.
bool oversubscribed(const Summary& s);

// --- The device's capabilities (Summary::rocm, compute_capability).

// bf16 has a fast path here: CPUs (measured by the probe where a run has one), ROCm's MI-series, and
// CUDA devices from compute capability 8.0 (Ampere); not on a V100 or T4 (7.x), which have fp16 Tensor
// Cores only. Unknown capability counts as having it.
bool bf16_fast(const Summary& s);

// "torch.autocast with bf16" or, where bf16 has no fast path, "torch.autocast with fp16 and a
// GradScaler (the Tesla V100 (compute capability 7.0) has no bf16 fast path)".
std::string lower_precision_words(const Summary& s);

// "cudaMalloc/cudaFree" or, on ROCm, "hipMalloc/hipFree".
std::string allocator_calls(const Summary& s);

// --- The Finding a rule builds.

Finding make(const char* rule_id, Severity severity, Suspect suspect);

// A finding about slow steps that took excess_ms beyond the usual step in all: the saving is that
// excess's share of all the step time, moderate from slow_steps::moderate_excess_pct on, info below,
// no suspect; fired on the slow steps out of every step in the series.
Finding slow_steps_finding(const char* rule_id, const Summary& s, const Thresholds& t,
                           const std::vector<size_t>& slow_steps, double excess_ms);

// A condition read from the run's aggregates (a share, a per-step mean): it counts as holding on
// every measured step, times_fired = data_points = the step count.
void fired_on_every_step(Finding& f, const Summary& s);

}  // namespace trainlab::rules
