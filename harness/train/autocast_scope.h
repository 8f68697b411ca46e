// Eager autocast for one region, as `with torch.autocast(...)` in Python: enabled on entry,
// restored and the weight-cast cache cleared on exit.
#pragma once

#include <ATen/autocast_mode.h>

namespace trainlab {

class AutocastScope {
 public:
  AutocastScope(c10::DeviceType device_type, bool enabled)
      : device_type_(device_type), was_enabled_(at::autocast::is_autocast_enabled(device_type)) {
    at::autocast::set_autocast_enabled(device_type_, enabled);
    if (enabled) at::autocast::set_autocast_dtype(device_type_, at::kBFloat16);
  }
  ~AutocastScope() {
    at::autocast::set_autocast_enabled(device_type_, was_enabled_);
    if (!was_enabled_) at::autocast::clear_cache();
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  c10::DeviceType device_type_;
  bool was_enabled_;
};

}  // namespace trainlab
