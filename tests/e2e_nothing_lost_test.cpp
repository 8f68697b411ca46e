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

// A factory that starts a process in a session of its own (subprocess.Popen with
// start_new_session=True; a fork that calls setsid) left it running under init after model add
// returned: killing the writer's process group missed it.
TEST(NothingLostE2E, ModelAddLeavesNoProcessBehindOutsideItsGroup) {
#ifndef TRAINLAB_TORCH_PYTHON
  GTEST_SKIP() << "no Python side in this build";
#endif
  const std::string dir = fresh_results_dir("nothing_lost_daemons");
  const std::string factory =
      "    p = subprocess.Popen(['sleep', '60'], start_new_session=True)\n"
      "    open(" + nlohmann::json(dir + "/popen.pid").dump() + ", 'w').write(str(p.pid))\n"
      "    child = os.fork()\n"
      "    if child == 0:\n"
      "        os.setsid()\n"
      "        time.sleep(60)\n"
      "        os._exit(0)\n"
      "    open(" + nlohmann::json(dir + "/fork.pid").dump() + ", 'w').write(str(child))\n";
  const std::string model = linear_model(dir, factory);
  const CliResult r = add(model, dir + "/b");
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
  for (const char* name : {"/popen.pid", "/fork.pid"}) {
    const pid_t pid = static_cast<pid_t>(std::atoi(slurp(dir + name).c_str()));
    ASSERT_GT(pid, 0) << name;
    const bool gone = test_process::gone_within_5_s(pid);
    if (!gone) ::kill(pid, SIGKILL);
    EXPECT_TRUE(gone) << name << ": pid " << pid << " outlived model add";
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

// `run --model B --compiled on` without the --python model add used: the export failed with
// ModuleNotFoundError, which was kept in compiled/<precision>.refused.json, and the next run with
// the right Python read "refused by an earlier run". Now the bundle keeps its interpreter (and the
// `Next:` hint names it), an import failure is the environment's and is not kept.
TEST(NothingLostE2E, AnInterpreterLackingTheModelsModulesIsNotRememberedAsTheModelsRefusal) {
#ifndef TRAINLAB_TORCH_PYTHON
  GTEST_SKIP() << "no Python side in this build";
#else
  const std::string dir = fresh_results_dir("nothing_lost_env");
  fs::create_directories(dir + "/deps");
  write(dir + "/deps/trainlab_fake_dep.py", "SCALE = 1.0\n");
  // An interpreter with the model's module: the build's, with deps/ on its path.
  const std::string python = dir + "/python with deps";
  write(python, "#!/bin/sh\nPYTHONPATH='" + dir + "/deps' exec '" + std::string(TRAINLAB_TORCH_PYTHON) + "' \"$@\"\n");
  fs::permissions(python, fs::perms::owner_all);
  const std::string model = linear_model(dir, "", "        y = y * trainlab_fake_dep.SCALE\n", "import trainlab_fake_dep\n");
  const std::string bundle = dir + "/b";
  CliResult r = add(model, bundle, "--python '" + python + "'");
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
  EXPECT_EQ(read_json(bundle + "/manifest.json")["python"], fs::path(python).lexically_normal().string());
  EXPECT_NE(r.out.find("Next: trainlab baseline --model " + bundle + " --python '" + python + "'"), std::string::npos)
      << r.out;

  // The build's own Python lacks the module: the compiled variant cannot run, and nothing is kept.
  const std::string run_args = "run --model " + bundle + " --compiled on --steps 2 --warmup 1 --sampler off --results ";
  r = run_trainlab(run_args + dir + "/r1 --python " + TRAINLAB_TORCH_PYTHON);
  const nlohmann::json first = read_json(only_run_dir(dir + "/r1") + "/run.json");
  ASSERT_FALSE(first.is_discarded()) << r.out << r.err;
  const std::string error = first["variants"][0].value("error", "");
  EXPECT_NE(error.find("ModuleNotFoundError"), std::string::npos) << error;
  if (fs::exists(bundle + "/compiled")) {
    for (const auto& entry : fs::directory_iterator(bundle + "/compiled")) {
      if (entry.path().extension() == ".json") {
        EXPECT_EQ(slurp(entry.path().string()).find("ModuleNotFoundError"), std::string::npos) << entry.path();
      }
    }
  }
  // Without --python the bundle's interpreter builds the package: the compiled variant runs.
  r = run_trainlab(run_args + dir + "/r2");
  EXPECT_EQ(r.exit_status, 0) << r.out << r.err;
  EXPECT_EQ((r.out + r.err).find("refused by an earlier run"), std::string::npos) << r.out << r.err;
  const nlohmann::json second = read_json(only_run_dir(dir + "/r2") + "/run.json");
  ASSERT_FALSE(second.is_discarded()) << r.out << r.err;
  EXPECT_EQ(second["variants"][0]["compile_info"].value("method", ""), "inductor-aot") << second["variants"][0].dump().substr(0, 600);
#endif
}

}  // namespace
}  // namespace trainlab::e2e
