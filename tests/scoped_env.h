// One environment variable set for one scope and unset after it (the readers' limits and other
// settings that come from the environment).
#pragma once

#include <stdlib.h>

namespace trainlab::test_env {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

}  // namespace trainlab::test_env
