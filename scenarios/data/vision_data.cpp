// The vision scenario's data without LibTorch: generates a labelled JPEG dataset once from a seed
// (class-specific colour blob + stripe texture on a random background, with photo-like noise),
// builds the decoded-RGB cache (one mmap-able file), and serves batches from either: read, JPEG
// decode (libjpeg-turbo), random resized crop / flip / colour jitter / normalise into float CHW.
//
// Dataset folder (<root>/vision-<hash>/, made by prepare_dataset):
//   manifest.json        {"kind": "vision", "format_version": 1, "params": {samples, image_size,
//                        quality, classes, seed}}
//   images/000000.jpg .. RGB JPEGs, image_size x image_size, 4:2:0, the spec's quality
//   labels.bin           samples x int32 (little-endian), each in [0, classes)
//   decoded_rgb.bin      optional decoded cache (prepare_vision_decoded_cache), see CacheHeader
//
// Every random draw uses our own mapping of mt19937_64 output to numbers (not the standard
// distributions, whose results differ between standard libraries), so files and batches are the
// same on every platform.
#include "scenarios/data/vision_data.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "core/bounded_json.h"
#include "core/atomic_file.h"
#include "core/errors.h"

namespace trainlab {
namespace fs = std::filesystem;
namespace {

constexpr int kVisionFormatVersion = 1;
constexpr const char* kVisionKind = "vision";
constexpr const char* kLabelsFile = "labels.bin";
constexpr const char* kCacheFile = "decoded_rgb.bin";
constexpr double kPi = 3.14159265358979323846;

// ImageNet channel statistics (images scaled to [0, 1]).
constexpr float kMean[3] = {0.485f, 0.456f, 0.406f};
constexpr float kStd[3] = {0.229f, 0.224f, 0.225f};

// decoded_rgb.bin: this 64-byte header (native little-endian), then count images of
// height x width x 3 bytes (RGB, row-major, as tjDecompress2 returns them), back to back; image i
// starts at byte 64 + i * height * width * 3.
constexpr char kCacheMagic[8] = {'T', 'L', 'V', 'I', 'S', 'R', 'G', 'B'};
constexpr uint32_t kCacheVersion = 1;
struct CacheHeader {
  char magic[8];        // "TLVISRGB"
  uint32_t version;     // kCacheVersion
  uint32_t channels;    // 3
  int64_t count;        // images
  int64_t height;       // pixels
  int64_t width;        // pixels
  uint8_t reserved[24];  // zero; keeps the pixel data 64-byte aligned
};
static_assert(sizeof(CacheHeader) == 64, "decoded cache header is 64 bytes");

// ---- Deterministic random numbers -------------------------------------------------------------

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) from the top 53 bits.
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
double uniform(std::mt19937_64& rng, double lo, double hi) { return lo + (hi - lo) * uniform01(rng); }
// Uniform integer in [0, n) (n >= 1); the modulo bias is below 2^-40 for any n we use.
int64_t uniform_index(std::mt19937_64& rng, int64_t n) {
  return static_cast<int64_t>((rng() >> 11) % static_cast<uint64_t>(n));
}

// ---- Small helpers ----------------------------------------------------------------------------

std::string image_relative_path(int64_t index) {
  char name[32];
  std::snprintf(name, sizeof name, "images/%06lld.jpg", static_cast<long long>(index));
  return name;
}

void write_whole_file(const std::string& path, const void* data, size_t bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) throw InputError("cannot write " + path + ": " + std::strerror(errno));
  const auto* p = static_cast<const unsigned char*>(data);
  size_t written_bytes = 0;
  while (written_bytes < bytes) {
    const ssize_t n = ::write(fd, p + written_bytes, bytes - written_bytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw InputError("cannot write " + path + ": " + why);
    }
    written_bytes += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) throw InputError("cannot write " + path + ": " + std::strerror(errno));
}

// Reads a whole file into buffer (reused between calls); DataError naming the file on failure.
void read_whole_file(const std::string& path, std::vector<unsigned char>& buffer) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw DataError(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw DataError(path, "cannot stat: " + why);
  }
  buffer.resize(static_cast<size_t>(info.st_size));
  size_t read_bytes = 0;
  while (read_bytes < buffer.size()) {
    const ssize_t n = ::read(fd, buffer.data() + read_bytes, buffer.size() - read_bytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw DataError(path, "cannot read: " + why);
    }
    if (n == 0) break;  // shrank while we read
    read_bytes += static_cast<size_t>(n);
  }
  ::close(fd);
  buffer.resize(read_bytes);
}

// A libjpeg-turbo handle owned by one thread (handles are not thread-safe).
class TurboJpegHandle {
 public:
  explicit TurboJpegHandle(bool compress) : handle_(compress ? tjInitCompress() : tjInitDecompress()) {
    if (handle_ == nullptr) {
      throw std::runtime_error(std::string("libjpeg-turbo: cannot create a handle: ") + tjGetErrorStr2(nullptr));
    }
  }
  ~TurboJpegHandle() { tjDestroy(handle_); }
  TurboJpegHandle(const TurboJpegHandle&) = delete;
  TurboJpegHandle& operator=(const TurboJpegHandle&) = delete;
  tjhandle get() const { return handle_; }

 private:
  tjhandle handle_;
};

tjhandle thread_decompressor() {
  thread_local TurboJpegHandle handle(false);
  return handle.get();
}

// Decodes one JPEG into rgb (size x size x 3). Truncated or corrupt data (libjpeg warnings
// included) and a size other than the dataset's throw DataError naming the file.
void decode_jpeg(const std::string& path, const std::vector<unsigned char>& jpeg, int64_t size, unsigned char* rgb) {
  tjhandle handle = thread_decompressor();
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(handle, jpeg.data(), static_cast<unsigned long>(jpeg.size()), &width, &height,
                          &subsampling, &colorspace) != 0) {
    throw DataError(path, std::string("corrupt JPEG: ") + tjGetErrorStr2(handle));
  }
  if (width != size || height != size) {
    throw DataError(path, "image is " + std::to_string(width) + "x" + std::to_string(height) + ", the dataset's are " +
                              std::to_string(size) + "x" + std::to_string(size));
  }
  if (tjDecompress2(handle, jpeg.data(), static_cast<unsigned long>(jpeg.size()), rgb, width, width * 3, height,
                    TJPF_RGB, TJFLAG_STOPONWARNING) != 0) {
    throw DataError(path, std::string("corrupt JPEG: ") + tjGetErrorStr2(handle));
  }
}

// ---- Generation -------------------------------------------------------------------------------

struct Rgb {
  float r, g, b;
};

Rgb hsv_to_rgb(double hue, double saturation, double value) {
  hue = hue - std::floor(hue);
  const double h6 = hue * 6.0;
  const int sector = static_cast<int>(h6) % 6;
  const double f = h6 - std::floor(h6);
  const double p = value * (1 - saturation), q = value * (1 - saturation * f), t = value * (1 - saturation * (1 - f));
  double r = 0, g = 0, b = 0;
  switch (sector) {
    case 0: r = value, g = t, b = p; break;
    case 1: r = q, g = value, b = p; break;
    case 2: r = p, g = value, b = t; break;
    case 3: r = p, g = q, b = value; break;
    case 4: r = t, g = p, b = value; break;
    default: r = value, g = p, b = q; break;
  }
  return {static_cast<float>(r * 255), static_cast<float>(g * 255), static_cast<float>(b * 255)};
}

// A soft-edged rotated ellipse.
struct Ellipse {
  float cx, cy, inv_rx, inv_ry, cos_a, sin_a, edge_scale;
  Rgb colour;
  // Coverage in [0, 1] at pixel centre (x, y).
  float coverage(float x, float y) const {
    const float dx = x - cx, dy = y - cy;
    const float u = (dx * cos_a + dy * sin_a) * inv_ry;  // scaled so u^2+v^2 = 1 on the edge
    const float v = (-dx * sin_a + dy * cos_a) * inv_rx;
    const float d2 = u * u + v * v;
    if (d2 >= 1.3f) return 0.f;
    const float a = (1.f - std::sqrt(d2)) * edge_scale;
    return a <= 0.f ? 0.f : (a >= 1.f ? 1.f : a);
  }
};

Ellipse random_ellipse(std::mt19937_64& rng, int64_t size, double min_radius, double max_radius, Rgb colour) {
  Ellipse e{};
  const double s = static_cast<double>(size);
  e.cx = static_cast<float>(uniform(rng, 0.25, 0.75) * s);
  e.cy = static_cast<float>(uniform(rng, 0.25, 0.75) * s);
  const double rx = uniform(rng, min_radius, max_radius) * s, ry = uniform(rng, min_radius, max_radius) * s;
  e.inv_rx = static_cast<float>(1.0 / rx);
  e.inv_ry = static_cast<float>(1.0 / ry);
  const double angle = uniform(rng, 0, kPi);
  e.cos_a = static_cast<float>(std::cos(angle));
  e.sin_a = static_cast<float>(std::sin(angle));
  e.edge_scale = static_cast<float>(std::min(rx, ry) / 1.5);  // ~1.5 px soft edge
  e.colour = colour;
  return e;
}

// Draws image `index`: its label, and size x size RGB pixels. What identifies the class (and
// survives flips, crops and brightness/contrast/saturation jitter): the hue of a large blob, and
// the orientation (horizontal/vertical) and period of a stripe texture over the whole image.
// Nuisance: background gradient colours and direction, blob position/shape, a distractor blob of
// random colour, stripe phase and tilt, and per-pixel noise (so JPEG compresses like a photo).
int32_t render_image(const VisionDataSpec& spec, int64_t index, std::vector<unsigned char>& rgb) {
  std::mt19937_64 rng(splitmix64(spec.seed ^ splitmix64(static_cast<uint64_t>(index) + 0x5bd1e995ULL)));
  const int64_t size = spec.image_size;
  const auto label = static_cast<int32_t>(uniform_index(rng, spec.classes));
  const double scale = static_cast<double>(size) / 160.0;

  // Background: a linear gradient between two muted colours.
  const Rgb bg0 = hsv_to_rgb(uniform01(rng), uniform(rng, 0.05, 0.45), uniform(rng, 0.25, 0.85));
  const Rgb bg1 = hsv_to_rgb(uniform01(rng), uniform(rng, 0.05, 0.45), uniform(rng, 0.25, 0.85));
  const double gradient_angle = uniform(rng, 0, 2 * kPi);
  const float gx = static_cast<float>(std::cos(gradient_angle) / static_cast<double>(size));
  const float gy = static_cast<float>(std::sin(gradient_angle) / static_cast<double>(size));
  const float half_size = 0.5f * static_cast<float>(size);

  // Stripes: horizontal for even labels, vertical for odd, tilted a little; period from label / 2.
  const double tilt = uniform(rng, -0.2, 0.2);
  const double stripe_angle = (label % 2 == 0 ? 0.0 : kPi / 2) + tilt;
  const double period_px = std::max(3.0, (5.0 + 4.0 * static_cast<double>((label / 2) % 3)) * scale);
  const float kx = static_cast<float>(2 * kPi / period_px * std::sin(stripe_angle));
  const float ky = static_cast<float>(2 * kPi / period_px * std::cos(stripe_angle));
  const float phase = static_cast<float>(uniform(rng, 0, 2 * kPi));
  const float stripe_amplitude = static_cast<float>(uniform(rng, 18, 30));

  // Class blob (hue from the label) and a smaller distractor of any colour.
  const double hue = (static_cast<double>(label) + uniform(rng, -0.15, 0.15)) / static_cast<double>(spec.classes);
  const Ellipse blob =
      random_ellipse(rng, size, 0.16, 0.30, hsv_to_rgb(hue, uniform(rng, 0.65, 1.0), uniform(rng, 0.6, 0.95)));
  const Ellipse distractor =
      random_ellipse(rng, size, 0.05, 0.11, hsv_to_rgb(uniform01(rng), uniform(rng, 0.2, 0.9), uniform(rng, 0.3, 0.9)));

  // Per-pixel noise (sensor-like grain) from a fast xorshift64* stream seeded from the image's
  // generator, one 64-bit draw per pixel: a luminance part shared by the channels (sum of four
  // bytes: roughly Gaussian, sd ~ amplitude / 2.2) and a uniform per-channel chroma part.
  uint64_t noise_state = rng() | 1;
  const float luma_noise_scale = static_cast<float>(uniform(rng, 24, 34)) / 510.f;
  const float chroma_noise_scale = static_cast<float>(uniform(rng, 6, 12)) / 127.5f;

  rgb.resize(static_cast<size_t>(size * size * 3));
  unsigned char* out = rgb.data();
  for (int64_t y = 0; y < size; ++y) {
    const float fy = static_cast<float>(y) + 0.5f;
    for (int64_t x = 0; x < size; ++x) {
      const float fx = static_cast<float>(x) + 0.5f;
      const float t = std::clamp(0.5f + (fx - half_size) * gx + (fy - half_size) * gy, 0.f, 1.f);
      const float stripe = std::sin(kx * fx + ky * fy + phase);
      float r = bg0.r + (bg1.r - bg0.r) * t, g = bg0.g + (bg1.g - bg0.g) * t, b = bg0.b + (bg1.b - bg0.b) * t;
      const float a = blob.coverage(fx, fy);
      if (a > 0.f) {
        r += (blob.colour.r - r) * a, g += (blob.colour.g - g) * a, b += (blob.colour.b - b) * a;
      }
      const float d = distractor.coverage(fx, fy);
      if (d > 0.f) {
        r += (distractor.colour.r - r) * d, g += (distractor.colour.g - g) * d, b += (distractor.colour.b - b) * d;
      }
      noise_state ^= noise_state >> 12;
      noise_state ^= noise_state << 25;
      noise_state ^= noise_state >> 27;
      const uint64_t bits = noise_state * 0x2545F4914F6CDD1DULL;
      const int byte_sum = static_cast<int>((bits >> 32) & 0xff) + static_cast<int>((bits >> 40) & 0xff) +
                           static_cast<int>((bits >> 48) & 0xff) + static_cast<int>((bits >> 56) & 0xff);
      const float shade = stripe * stripe_amplitude + static_cast<float>(byte_sum - 510) * luma_noise_scale;
      const float channel[3] = {r + shade, g + shade, b + shade};
      for (int c = 0; c < 3; ++c) {
        const float chroma = (static_cast<float>((bits >> (8 * c)) & 0xff) - 127.5f) * chroma_noise_scale;
        *out++ = static_cast<unsigned char>(std::clamp(channel[c] + chroma, 0.f, 255.f) + 0.5f);  // 255.5 -> 255
      }
    }
  }
  return label;
}

void validate_spec(const VisionDataSpec& spec) {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw InputError("vision dataset: " + what);
  };
  require(spec.samples >= 1 && spec.samples <= 10'000'000, "samples must be in 1..10000000");
  require(spec.image_size >= 8 && spec.image_size <= 4096, "image_size must be in 8..4096");
  require(spec.quality >= 1 && spec.quality <= 100, "quality must be in 1..100");
  require(spec.classes >= 1 && spec.classes <= 1000, "classes must be in 1..1000");
}

// Renders and compresses images [0, samples) on a few threads; each image depends only on the
// spec and its index, so the files are the same whatever the thread count.
void generate_vision_files(const VisionDataSpec& spec, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir + "/images", ec);
  if (ec) throw InputError("cannot create " + dir + "/images: " + ec.message());

  std::vector<int32_t> labels(static_cast<size_t>(spec.samples));
  std::atomic<int64_t> next_index{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&]() {
    try {
      TurboJpegHandle compressor(true);
      std::vector<unsigned char> rgb;
      const int size = static_cast<int>(spec.image_size);
      for (int64_t i = next_index++; i < spec.samples; i = next_index++) {
        labels[static_cast<size_t>(i)] = render_image(spec, i, rgb);
        unsigned char* jpeg = nullptr;
        unsigned long jpeg_bytes = 0;
        if (tjCompress2(compressor.get(), rgb.data(), size, size * 3, size, TJPF_RGB, &jpeg, &jpeg_bytes, TJSAMP_420,
                        static_cast<int>(spec.quality), 0) != 0) {
          const std::string why = tjGetErrorStr2(compressor.get());
          tjFree(jpeg);
          throw std::runtime_error("libjpeg-turbo: cannot compress image " + std::to_string(i) + ": " + why);
        }
        try {
          write_whole_file(dir + "/" + image_relative_path(i), jpeg, jpeg_bytes);
        } catch (...) {
          tjFree(jpeg);
          throw;
        }
        tjFree(jpeg);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next_index = spec.samples;  // the others stop at their next image
    }
  };
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  const auto thread_count = static_cast<size_t>(std::min<int64_t>({static_cast<int64_t>(hardware), 8, spec.samples}));
  std::vector<std::thread> threads;
  for (size_t t = 1; t < thread_count; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);

  write_whole_file(dir + "/" + kLabelsFile, labels.data(), labels.size() * sizeof(int32_t));
}

nlohmann::json spec_params(const VisionDataSpec& spec) {
  return {{"samples", spec.samples},
          {"image_size", spec.image_size},
          {"quality", spec.quality},
          {"classes", spec.classes},
          {"seed", spec.seed}};
}

// ---- Opening a prepared dataset ---------------------------------------------------------------

struct VisionDataset {
  std::string dir;
  VisionDataSpec spec;
  std::vector<int32_t> labels;
};

VisionDataset open_vision_dataset(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw DataError(dir, "no such vision dataset folder");
  VisionDataset dataset;
  dataset.dir = dir;
  const std::string manifest_path = dir + "/manifest.json";
  if (!fs::exists(manifest_path, ec)) {
    throw DataError(manifest_path, "missing (not a prepared vision dataset folder, or an incomplete one)");
  }
  try {
    const nlohmann::json manifest = parse_bounded_json(read_file(manifest_path), manifest_path);
    if (manifest.is_discarded()) throw DataError(manifest_path, "not valid JSON");
    if (manifest.at("kind") != kVisionKind) {
      throw DataError(manifest_path, "not a vision dataset (kind " + manifest.at("kind").dump() + ")");
    }
    if (manifest.at("format_version") != kVisionFormatVersion) {
      throw DataError(manifest_path, "format_version " + manifest.at("format_version").dump() + ", this build reads " +
                                         std::to_string(kVisionFormatVersion) + " (delete the folder to regenerate)");
    }
    const nlohmann::json& params = manifest.at("params");
    dataset.spec.samples = params.at("samples").get<int64_t>();
    dataset.spec.image_size = params.at("image_size").get<int64_t>();
    dataset.spec.quality = params.at("quality").get<int64_t>();
    dataset.spec.classes = params.at("classes").get<int64_t>();
    dataset.spec.seed = params.at("seed").get<uint64_t>();
    validate_spec(dataset.spec);
  } catch (const DataError&) {
    throw;
  } catch (const std::exception& e) {
    throw DataError(manifest_path, std::string("malformed or unreadable manifest: ") + e.what());
  }

  const std::string labels_path = dir + "/" + kLabelsFile;
  std::vector<unsigned char> bytes;
  read_whole_file(labels_path, bytes);
  const size_t expected_bytes = static_cast<size_t>(dataset.spec.samples) * sizeof(int32_t);
  if (bytes.size() != expected_bytes) {
    throw DataError(labels_path, std::to_string(bytes.size()) + " bytes, expected " + std::to_string(expected_bytes) +
                                     " (" + std::to_string(dataset.spec.samples) + " int32 labels)");
  }
  dataset.labels.resize(static_cast<size_t>(dataset.spec.samples));
  std::memcpy(dataset.labels.data(), bytes.data(), expected_bytes);
  for (size_t i = 0; i < dataset.labels.size(); ++i) {
    if (dataset.labels[i] < 0 || dataset.labels[i] >= dataset.spec.classes) {
      throw DataError(labels_path, "label " + std::to_string(dataset.labels[i]) + " of sample " + std::to_string(i) +
                                       " is outside [0, " + std::to_string(dataset.spec.classes) + ")");
    }
  }
  return dataset;
}

void validate_augment(const VisionAugment& augment) {
  if (augment.crop_size < 1 || augment.crop_size > 4096) {
    throw InputError("vision augment: crop_size must be in 1..4096, got " + std::to_string(augment.crop_size));
  }
  if (!(augment.intensity >= 0.0 && augment.intensity <= 3.0)) {
    throw InputError("vision augment: intensity must be in 0..3, got " + std::to_string(augment.intensity));
  }
}

// ---- Augmentation -----------------------------------------------------------------------------

struct AugmentPlan {
  double x0 = 0, y0 = 0, width = 0, height = 0;  // source region, pixels
  bool flip = false;
  bool jitter = false;
  float brightness = 1, contrast = 1, saturation = 1;  // factors; 1 = unchanged
};

// intensity 0: the centred square covering 87.5 % of the side (resize-then-centre-crop), no flip
// or jitter. Otherwise RandomResizedCrop(scale 0.35..1, ratio 3/4..4/3; ten tries, then the centre
// square), flip with p = 0.5, and brightness/contrast/saturation factors in [1-s, 1+s],
// s = 0.4 * intensity (clamped at 0 from below).
AugmentPlan plan_augment(int64_t source_width, int64_t source_height, double intensity, std::mt19937_64& rng) {
  AugmentPlan plan;
  const auto w = static_cast<double>(source_width), h = static_cast<double>(source_height);
  if (intensity <= 0) {
    const double side = 0.875 * std::min(w, h);
    plan.width = plan.height = side;
    plan.x0 = (w - side) / 2;
    plan.y0 = (h - side) / 2;
    return plan;
  }
  bool found = false;
  for (int attempt = 0; attempt < 10 && !found; ++attempt) {
    const double area = w * h * uniform(rng, 0.35, 1.0);
    const double aspect = std::exp(uniform(rng, std::log(3.0 / 4.0), std::log(4.0 / 3.0)));
    const double cw = std::round(std::sqrt(area * aspect)), ch = std::round(std::sqrt(area / aspect));
    if (cw >= 1 && ch >= 1 && cw <= w && ch <= h) {
      plan.width = cw;
      plan.height = ch;
      plan.x0 = static_cast<double>(uniform_index(rng, static_cast<int64_t>(w - cw) + 1));
      plan.y0 = static_cast<double>(uniform_index(rng, static_cast<int64_t>(h - ch) + 1));
      found = true;
    }
  }
  if (!found) {
    const double side = std::min(w, h);
    plan.width = plan.height = side;
    plan.x0 = (w - side) / 2;
    plan.y0 = (h - side) / 2;
  }
  plan.flip = uniform01(rng) < 0.5;
  const double strength = 0.4 * intensity;
  const double low = std::max(0.0, 1.0 - strength), high = 1.0 + strength;
  plan.jitter = true;
  plan.brightness = static_cast<float>(uniform(rng, low, high));
  plan.contrast = static_cast<float>(uniform(rng, low, high));
  plan.saturation = static_cast<float>(uniform(rng, low, high));
  return plan;
}

// Bilinear sampling positions along one axis: output i reads source taps index0/index1 blended by
// weight (pixel-centre aligned, edges clamped).
struct AxisTaps {
  std::vector<int32_t> index0, index1;
  std::vector<float> weight;
};

void compute_taps(double start, double length, int64_t source_length, int64_t output_length, bool reverse,
                  AxisTaps& taps) {
  const auto n = static_cast<size_t>(output_length);
  taps.index0.resize(n);
  taps.index1.resize(n);
  taps.weight.resize(n);
  const double step = length / static_cast<double>(output_length);
  const double last = static_cast<double>(source_length - 1);
  for (size_t i = 0; i < n; ++i) {
    const double position = std::clamp(start + (static_cast<double>(i) + 0.5) * step - 0.5, 0.0, last);
    const auto i0 = static_cast<int32_t>(position);
    const size_t slot = reverse ? n - 1 - i : i;
    taps.index0[slot] = i0;
    taps.index1[slot] = std::min<int32_t>(i0 + 1, static_cast<int32_t>(source_length - 1));
    taps.weight[slot] = static_cast<float>(position - i0);
  }
}

// Crop + resize (+ flip) the HWC uint8 image into CHW float planes at out, then jitter and
// normalise in place.
void augment_into(const unsigned char* rgb, int64_t width, int64_t height, const AugmentPlan& plan, int64_t crop,
                  float* out) {
  thread_local AxisTaps columns, rows;
  compute_taps(plan.x0, plan.width, width, crop, plan.flip, columns);
  compute_taps(plan.y0, plan.height, height, crop, false, rows);
  const size_t plane = static_cast<size_t>(crop * crop);
  float* out_r = out;
  float* out_g = out + plane;
  float* out_b = out + 2 * plane;
  const size_t row_bytes = static_cast<size_t>(width) * 3;
  constexpr float kInv255 = 1.0f / 255.0f;
  double grey_sum = 0;

  for (int64_t oy = 0; oy < crop; ++oy) {
    const unsigned char* row0 = rgb + static_cast<size_t>(rows.index0[static_cast<size_t>(oy)]) * row_bytes;
    const unsigned char* row1 = rgb + static_cast<size_t>(rows.index1[static_cast<size_t>(oy)]) * row_bytes;
    const float wy = rows.weight[static_cast<size_t>(oy)];
    const size_t base = static_cast<size_t>(oy * crop);
    float row_grey = 0;
    for (int64_t ox = 0; ox < crop; ++ox) {
      const size_t x0 = static_cast<size_t>(columns.index0[static_cast<size_t>(ox)]) * 3;
      const size_t x1 = static_cast<size_t>(columns.index1[static_cast<size_t>(ox)]) * 3;
      const float wx = columns.weight[static_cast<size_t>(ox)];
      float value[3];
      for (size_t c = 0; c < 3; ++c) {
        const float top = row0[x0 + c] + (row0[x1 + c] - static_cast<float>(row0[x0 + c])) * wx;
        const float bottom = row1[x0 + c] + (row1[x1 + c] - static_cast<float>(row1[x0 + c])) * wx;
        value[c] = (top + (bottom - top) * wy) * kInv255;
      }
      out_r[base + static_cast<size_t>(ox)] = value[0];
      out_g[base + static_cast<size_t>(ox)] = value[1];
      out_b[base + static_cast<size_t>(ox)] = value[2];
      row_grey += 0.299f * value[0] + 0.587f * value[1] + 0.114f * value[2];
    }
    grey_sum += row_grey;
  }

  const float inv_std[3] = {1.0f / kStd[0], 1.0f / kStd[1], 1.0f / kStd[2]};
  if (!plan.jitter) {
    for (size_t i = 0; i < plane; ++i) {
      out_r[i] = (out_r[i] - kMean[0]) * inv_std[0];
      out_g[i] = (out_g[i] - kMean[1]) * inv_std[1];
      out_b[i] = (out_b[i] - kMean[2]) * inv_std[2];
    }
    return;
  }
  // Brightness scales; contrast blends with the mean grey of the brightened crop (brightness x the
  // crop's mean, ignoring clipping); saturation blends with each pixel's grey. Clamp after each.
  const float brightness = plan.brightness, contrast = plan.contrast, saturation = plan.saturation;
  const float mean_grey = std::clamp(static_cast<float>(grey_sum / static_cast<double>(plane)) * brightness, 0.f, 1.f);
  const float contrast_offset = mean_grey * (1.0f - contrast);
  for (size_t i = 0; i < plane; ++i) {
    float r = std::min(out_r[i] * brightness, 1.0f);
    float g = std::min(out_g[i] * brightness, 1.0f);
    float b = std::min(out_b[i] * brightness, 1.0f);
    r = std::clamp(r * contrast + contrast_offset, 0.f, 1.f);
    g = std::clamp(g * contrast + contrast_offset, 0.f, 1.f);
    b = std::clamp(b * contrast + contrast_offset, 0.f, 1.f);
    const float grey = 0.299f * r + 0.587f * g + 0.114f * b;
    r = std::clamp(grey + (r - grey) * saturation, 0.f, 1.f);
    g = std::clamp(grey + (g - grey) * saturation, 0.f, 1.f);
    b = std::clamp(grey + (b - grey) * saturation, 0.f, 1.f);
    out_r[i] = (r - kMean[0]) * inv_std[0];
    out_g[i] = (g - kMean[1]) * inv_std[1];
    out_b[i] = (b - kMean[2]) * inv_std[2];
  }
}

// ---- Batch assembly shared by both sources ----------------------------------------------------

// Builds a batch; fetch(index, stages, clock) must leave the sample's RGB bytes in a buffer it
// returns, charging its read (and decode) time to stages through clock. Every nanosecond
// between entry and return lands in exactly one stage, so the stages sum to the call's wall time.
template <class Fetch>
HostBatch assemble_batch(const BatchRequest& request, const BufferAllocator& allocate, const VisionDataset& dataset,
                         const VisionAugment& augment, const Fetch& fetch) {
  StageClock clock;
  const int64_t samples = dataset.spec.samples;
  for (int64_t index : request.sample_indices) {
    if (index < 0 || index >= samples) {
      throw std::out_of_range("vision dataset " + dataset.dir + ": sample index " + std::to_string(index) +
                              " is outside [0, " + std::to_string(samples) + ")");
    }
  }
  const auto batch_size = static_cast<int64_t>(request.sample_indices.size());
  const int64_t crop = augment.crop_size;
  HostBatch batch;
  batch.samples = batch_size;
  batch.inputs.push_back(make_host_tensor(ElementType::kFloat32, {batch_size, 3, crop, crop}, allocate));
  batch.targets = make_host_tensor(ElementType::kInt64, {batch_size}, allocate);
  auto* targets = batch.targets.as<int64_t>();
  for (int64_t i = 0; i < batch_size; ++i) {
    targets[i] = dataset.labels[static_cast<size_t>(request.sample_indices[static_cast<size_t>(i)])];
  }
  float* images = batch.inputs[0].as<float>();
  const size_t image_floats = static_cast<size_t>(3 * crop * crop);
  clock.charge(batch.stage_ns.collate_ns);

  const int64_t size = dataset.spec.image_size;
  for (int64_t i = 0; i < batch_size; ++i) {
    const unsigned char* rgb = fetch(request.sample_indices[static_cast<size_t>(i)], batch.stage_ns, clock);
    std::mt19937_64 rng = sample_rng(request.augment_seed, request.first_position + i);
    const AugmentPlan plan = plan_augment(size, size, augment.intensity, rng);
    augment_into(rgb, size, size, plan, crop, images + static_cast<size_t>(i) * image_floats);
    clock.charge(batch.stage_ns.augment_ns);
  }
  return batch;
}

std::string format_intensity(double intensity) {
  std::ostringstream text;
  text << intensity;
  return text.str();
}

// ---- Sources ----------------------------------------------------------------------------------

// A vision source: the dataset (its spec, folder and labels) and the augmentation, and a batch
// assembled the same way whichever source fetches its images (assemble_batch).
class VisionSource : public SampleSource {
 public:
  int64_t num_samples() const override { return dataset_.spec.samples; }

  HostBatch load_batch(const BatchRequest& request, const BufferAllocator& allocate) const override {
    return assemble_batch(request, allocate, dataset_, augment_,
                          [this](int64_t index, StageTimes& stages, StageClock& clock) {
                            return fetch(index, stages, clock);
                          });
  }

 protected:
  VisionSource(VisionDataset dataset, VisionAugment augment) : dataset_(std::move(dataset)), augment_(augment) {}

  // Leaves sample `index`'s RGB bytes in a buffer of this thread's and returns it, charging its read
  // (and decode) time to stages through clock.
  virtual const unsigned char* fetch(int64_t index, StageTimes& stages, StageClock& clock) const = 0;

  VisionDataset dataset_;
  VisionAugment augment_;
};

class VisionJpegSource final : public VisionSource {
 public:
  VisionJpegSource(VisionDataset dataset, VisionAugment augment) : VisionSource(std::move(dataset), augment) {}

  std::string describe() const override {
    const VisionDataSpec& s = dataset_.spec;
    return "jpeg: " + std::to_string(s.samples) + " images " + std::to_string(s.image_size) + "x" +
           std::to_string(s.image_size) + " q" + std::to_string(s.quality) + ", " + std::to_string(s.classes) +
           " classes, crop " + std::to_string(augment_.crop_size) + " intensity " +
           format_intensity(augment_.intensity) + " (" + dataset_.dir + ")";
  }

 private:
  const unsigned char* fetch(int64_t index, StageTimes& stages, StageClock& clock) const override {
    thread_local std::vector<unsigned char> jpeg;
    thread_local std::vector<unsigned char> rgb;
    const int64_t size = dataset_.spec.image_size;
    rgb.resize(static_cast<size_t>(size * size * 3));
    const std::string path = dataset_.dir + "/" + image_relative_path(index);
    read_whole_file(path, jpeg);
    clock.charge(stages.read_ns);
    decode_jpeg(path, jpeg, size, rgb.data());
    clock.charge(stages.decode_ns);
    return rgb.data();
  }
};

// A read-only mapping of a whole file.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      throw DataError(path, errno == ENOENT ? std::string("missing decoded cache (prepare_vision_decoded_cache builds it)")
                                            : std::string("cannot open: ") + std::strerror(errno));
    }
    struct stat info {};
    if (::fstat(fd, &info) != 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw DataError(path, "cannot stat: " + why);
    }
    bytes_ = static_cast<size_t>(info.st_size);
    if (bytes_ > 0) {
      void* p = ::mmap(nullptr, bytes_, PROT_READ, MAP_SHARED, fd, 0);
      if (p == MAP_FAILED) {
        const std::string why = std::strerror(errno);
        ::close(fd);
        throw DataError(path, "cannot mmap: " + why);
      }
      data_ = static_cast<const unsigned char*>(p);
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<unsigned char*>(data_), bytes_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const unsigned char* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  const unsigned char* data_ = nullptr;
  size_t bytes_ = 0;
};

class VisionCacheSource final : public VisionSource {
 public:
  VisionCacheSource(VisionDataset dataset, VisionAugment augment, const std::string& cache_path)
      : VisionSource(std::move(dataset), augment), cache_path_(cache_path), cache_(cache_path) {
    const int64_t size = dataset_.spec.image_size;
    image_bytes_ = static_cast<size_t>(size * size * 3);
    const size_t expected_bytes = sizeof(CacheHeader) + static_cast<size_t>(dataset_.spec.samples) * image_bytes_;
    if (cache_.bytes() < sizeof(CacheHeader)) {
      throw DataError(cache_path_, "truncated decoded cache: " + std::to_string(cache_.bytes()) +
                                       " bytes, shorter than its 64-byte header");
    }
    CacheHeader header{};
    std::memcpy(&header, cache_.data(), sizeof header);
    if (std::memcmp(header.magic, kCacheMagic, sizeof kCacheMagic) != 0) {
      throw DataError(cache_path_, "not a decoded vision cache (bad magic)");
    }
    if (header.version != kCacheVersion || header.channels != 3) {
      throw DataError(cache_path_, "decoded cache version " + std::to_string(header.version) + " with " +
                                       std::to_string(header.channels) + " channels; this build reads version " +
                                       std::to_string(kCacheVersion) + " RGB (delete the file to rebuild it)");
    }
    if (header.count != dataset_.spec.samples || header.height != size || header.width != size) {
      throw DataError(cache_path_, "decoded cache holds " + std::to_string(header.count) + " images " +
                                       std::to_string(header.width) + "x" + std::to_string(header.height) +
                                       ", the dataset has " + std::to_string(dataset_.spec.samples) + " of " +
                                       std::to_string(size) + "x" + std::to_string(size));
    }
    if (cache_.bytes() != expected_bytes) {
      throw DataError(cache_path_, std::string(cache_.bytes() < expected_bytes ? "truncated" : "oversized") +
                                       " decoded cache: " + std::to_string(cache_.bytes()) + " bytes, expected " +
                                       std::to_string(expected_bytes));
    }
  }

  std::string describe() const override {
    const VisionDataSpec& s = dataset_.spec;
    return "decoded cache: " + std::to_string(s.samples) + " images " + std::to_string(s.image_size) + "x" +
           std::to_string(s.image_size) + " RGB (" + std::to_string(cache_.bytes() >> 20) + " MiB, from q" +
           std::to_string(s.quality) + " JPEGs), " + std::to_string(s.classes) + " classes, crop " +
           std::to_string(augment_.crop_size) + " intensity " + format_intensity(augment_.intensity) + " (" +
           cache_path_ + ")";
  }

 private:
  const unsigned char* fetch(int64_t index, StageTimes& stages, StageClock& clock) const override {
    thread_local std::vector<unsigned char> rgb;
    rgb.resize(image_bytes_);
    // "Read" = copying the sample out of the mapping (page-ins included); nothing to decode.
    std::memcpy(rgb.data(), cache_.data() + sizeof(CacheHeader) + static_cast<size_t>(index) * image_bytes_,
                image_bytes_);
    clock.charge(stages.read_ns);
    return rgb.data();
  }

  std::string cache_path_;
  MappedFile cache_;
  size_t image_bytes_ = 0;
};

}  // namespace

PreparedDataset prepare_vision_dataset(const std::string& data_root, const VisionDataSpec& spec) {
  validate_spec(spec);
  return prepare_dataset(data_root, kVisionKind, kVisionFormatVersion, spec_params(spec),
                         [&spec](const std::string& tmp_dir) { generate_vision_files(spec, tmp_dir); });
}

std::string prepare_vision_decoded_cache(const std::string& dataset_dir) {
  const VisionDataset dataset = open_vision_dataset(dataset_dir);
  return prepare_derived_file(dataset_dir, kCacheFile, [&dataset](const std::string& tmp_path) {
    const int64_t size = dataset.spec.image_size;
    CacheHeader header{};
    std::memcpy(header.magic, kCacheMagic, sizeof kCacheMagic);
    header.version = kCacheVersion;
    header.channels = 3;
    header.count = dataset.spec.samples;
    header.height = size;
    header.width = size;

    const int fd = ::open(tmp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) throw InputError("cannot write " + tmp_path + ": " + std::strerror(errno));
    auto write_all = [&](const void* data, size_t bytes) {
      const auto* p = static_cast<const unsigned char*>(data);
      while (bytes > 0) {
        const ssize_t n = ::write(fd, p, bytes);
        if (n < 0) {
          if (errno == EINTR) continue;
          throw InputError("cannot write " + tmp_path + ": " + std::strerror(errno));
        }
        p += n;
        bytes -= static_cast<size_t>(n);
      }
    };
    try {
      write_all(&header, sizeof header);
      std::vector<unsigned char> jpeg;
      std::vector<unsigned char> rgb(static_cast<size_t>(size * size * 3));
      for (int64_t i = 0; i < dataset.spec.samples; ++i) {
        const std::string path = dataset.dir + "/" + image_relative_path(i);
        read_whole_file(path, jpeg);
        decode_jpeg(path, jpeg, size, rgb.data());
        write_all(rgb.data(), rgb.size());
      }
      if (::fsync(fd) != 0) throw InputError("cannot write " + tmp_path + ": " + std::strerror(errno));
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (::close(fd) != 0) throw InputError("cannot write " + tmp_path + ": " + std::strerror(errno));
  });
}

std::unique_ptr<SampleSource> open_vision_jpeg_source(const std::string& dataset_dir, const VisionAugment& augment) {
  validate_augment(augment);
  return std::make_unique<VisionJpegSource>(open_vision_dataset(dataset_dir), augment);
}

std::unique_ptr<SampleSource> open_vision_cache_source(const std::string& dataset_dir, const VisionAugment& augment) {
  validate_augment(augment);
  VisionDataset dataset = open_vision_dataset(dataset_dir);
  const std::string cache_path = dataset_dir + "/" + kCacheFile;
  return std::make_unique<VisionCacheSource>(std::move(dataset), augment, cache_path);
}

}  // namespace trainlab
