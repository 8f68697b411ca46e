// End-to-end, issue 53 ("nothing lost, second campaign"), `model add`: --force replaces only what
// trainlab wrote in a bundle folder (never the user's notes, data or the model file itself); the
// bundle folder follows the umask; what the model's factory starts outside its process group
// (Popen with start_new_session, fork + setsid) does not outlive model add; a model whose output
// is NaN is said to be NaN; an interpreter lacking a module the model imports is not remembered as
// the model's refusal, and the bundle runs with the interpreter it was made with.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "e2e_support.h"
#include "process_gone.h"

namespace trainlab::e2e {
namespace {

namespace fs = std::filesystem;

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(slurp(path), nullptr, false); }

// A linear model `make` in dir/model.py; `factory_code` runs in the factory first, `forward_code`
// on the output y, `header` at the top (imports).
std::string linear_model(const std::string& dir, const std::string& factory_code = "",
                         const std::string& forward_code = "", const std::string& header = "") {
  const std::string file = dir + "/model.py";
  write(file, "import os, subprocess, sys, time\nimport torch\nimport torch.nn as nn\n" + header +
                  "\n\ndef make():\n" + factory_code + "    return Small()\n\n"
                  "class Small(nn.Module):\n"
                  "    def __init__(self):\n"
                  "        super().__init__()\n"
                  "        self.linear = nn.Linear(4, 2)\n"
                  "    def forward(self, x):\n"
                  "        y = self.linear(x)\n" +
                  forward_code + "        return y\n");
  return file;
}

const std::string kBatch = " --input x:float32[2,4] --target y:int64[2]:0..1 --no-package";

CliResult add(const std::string& source, const std::string& out, const std::string& extra = "") {
  return run_trainlab("model add " + source + ":make" + kBatch + " --out " + out + " " + extra);
}

void expect_one_line(const CliResult& r, const std::string& part, const std::string& what) {
  EXPECT_EQ(r.exit_status, 2) << what << "\n" << r.out << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << what << "\n" << r.err;
  EXPECT_NE(r.err.find(part), std::string::npos) << what << "\n" << r.err;
}

// `model add --force` renamed the whole folder away and deleted it: the user's notes, a data folder
// kept there, and the model file named on the command line when it sat in the bundle went with it.
TEST(NothingLostE2E, ForceReplacesOnlyWhatTrainlabWroteInABundle) {
#ifndef TRAINLAB_TORCH_PYTHON
  GTEST_SKIP() << "no Python side in this build";
#endif
  const std::string dir = fresh_results_dir("nothing_lost_force");
  const std::string model = linear_model(dir);
  const std::string bundle = dir + "/b";
  const mode_t old_umask = ::umask(022);
  CliResult r = add(model, bundle);
  ::umask(old_umask);
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
  struct stat info {};
  ASSERT_EQ(::stat(bundle.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0755u) << "a bundle made under umask 022 (mkdtemp made it 0700)";

  // What trainlab's own runs keep in a bundle: its package's log, refusals, packages.
  write(bundle + "/package.log", "built\n");
  fs::create_directories(bundle + "/compiled");
  write(bundle + "/compiled/fp32.log", "refused\n");
  fs::create_directories(bundle + "/inductor-make-0123456789abcdef");
  write(bundle + "/inductor-make-0123456789abcdef/model.pt2", "package");
  write(bundle + "/inductor-make-0123456789abcdef.lock", "");

  // The user's files: refused, named, untouched, the bundle as it was.
  write(bundle + "/notes.txt", "my notes\n");
  r = add(model, bundle, "--name second --force");
  expect_one_line(r, bundle + "/notes.txt, which trainlab did not write", "notes.txt");
  EXPECT_EQ(slurp(bundle + "/notes.txt"), "my notes\n");
  EXPECT_EQ(read_json(bundle + "/manifest.json")["name"], "make");
  fs::remove(bundle + "/notes.txt");
  fs::create_directories(bundle + "/data");
  write(bundle + "/data/x.bin", "data");
  expect_one_line(add(model, bundle, "--force"), bundle + "/data, which trainlab did not write", "data/");
  EXPECT_EQ(slurp(bundle + "/data/x.bin"), "data");
  fs::remove_all(bundle + "/data");
  write(bundle + "/source/helper.py", "X = 1\n");
  expect_one_line(add(model, bundle, "--force"), bundle + "/source/helper.py, which trainlab did not write",
                  "source/helper.py");
  EXPECT_EQ(slurp(bundle + "/source/helper.py"), "X = 1\n");
  fs::remove(bundle + "/source/helper.py");

  // The model file named on the command line, inside the bundle: never replaced.
  fs::copy_file(model, bundle + "/mymodel.py");
  expect_one_line(add(bundle + "/mymodel.py", bundle, "--force"), "holds the model file", "the model file");
  EXPECT_EQ(slurp(bundle + "/mymodel.py"), slurp(model));
  fs::remove(bundle + "/mymodel.py");

  // Only trainlab's files left: replaced, the old package and refusals with the old bundle.
  r = add(model, bundle, "--name second --force");
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
  EXPECT_EQ(read_json(bundle + "/manifest.json")["name"], "second");
  for (const char* gone : {"/package.log", "/compiled", "/inductor-make-0123456789abcdef",
                           "/inductor-make-0123456789abcdef.lock"}) {
    EXPECT_FALSE(fs::exists(bundle + gone)) << gone;
  }
  for (const auto& entry : fs::directory_iterator(bundle)) {  // nothing set aside left inside
    EXPECT_EQ(entry.path().filename().string().find(".trainlab-old-"), std::string::npos) << entry.path();
  }
  for (const auto& entry : fs::directory_iterator(dir)) {  // nor beside
    EXPECT_EQ(entry.path().filename().string().find(".b."), std::string::npos) << entry.path();
  }
}

// A model whose output is NaN was blamed on "something a trace cannot follow".
TEST(NothingLostE2E, AModelWhoseOutputIsNanIsSaidToBeNan) {
#ifndef TRAINLAB_TORCH_PYTHON
  GTEST_SKIP() << "no Python side in this build";
#endif
  const std::string dir = fresh_results_dir("nothing_lost_nan");
  const std::string model = linear_model(dir, "", "        y = y * float('nan')\n");
  const CliResult r = add(model, dir + "/b");
  expect_one_line(r, "the model's output is NaN in 4 of its 4 values", "NaN output");
  EXPECT_EQ(r.err.find("a trace cannot follow"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/b"));
}

}  // namespace
}  // namespace trainlab::e2e
