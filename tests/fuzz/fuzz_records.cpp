// Fuzz target: the JSON documents trainlab reads back from a results folder: run.json (and a
// variant's record) and diagnosis.json, as history, compare and diagnose read them.
#include <nlohmann/json.hpp>
#include <string>

#include "core/errors.h"
#include "core/run_record.h"
#include "diagnostics/diagnosis.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = trainlab::fuzz::scratch_path(".record.json");
  trainlab::fuzz::write_scratch(path, data, size);
  try {
    trainlab::read_run_record(path);
  } catch (const trainlab::InputError&) {
  }
  try {
    trainlab::read_variant_record(path);
  } catch (const trainlab::InputError&) {
  }
  try {
    trainlab::read_diagnosis_file(path);
  } catch (const trainlab::InputError&) {
  }
  return 0;
}
