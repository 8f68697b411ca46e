// The recsys dataset: generation (Markov chain over items), zstd-compressed column blocks read by
// random access, a decoded fixed-row cache read through mmap, and the augmentation (sequence crop,
// masking, negative sampling) shared by both sources so they give identical batches.
//
// Folder <data_root>/recsys-<hash>/ (format version 1; fixed-width integers are little-endian):
//   manifest.json       {"kind": "recsys", "format_version": 1, "params": RecsysDataSpec fields}
//   shard-NNNNN.zst     records_per_shard users: independent zstd frames (level 3, content
//                       checksum) back to back, one per block of records_per_block users.
//   index.bin           "TLRSIDX1", u32 version, u32 block count, u64 records; then per block
//                       (32 bytes): u32 shard, u32 records, u64 first record, u64 byte offset in
//                       the shard, u32 compressed bytes, u32 decompressed bytes.
//   A decompressed block is all unsigned LEB128 varints: record count, first record, the byte size
//   of each of the five columns, then the columns: lengths (one per user), user features (F per
//   user), items (per event: zigzag delta from the user's previous item, the first from 0),
//   categories, actions (one per event).
//   decoded_histories.bin (built on demand): a 64-byte header ("TLRSDEC1", u32 version,
//   u32 max_history, u32 user_features, u32 0, u64 users, u64 row bytes, u64 items, zeros), then
//   one row per user of int32: length, user features[F], items[H], categories[H], actions[H]
//   (H = max_history, zero-padded past length).
#include "scenarios/data/recsys_data.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/bounded_json.h"
#include "core/atomic_file.h"
#include "core/errors.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "recsys files are written in host byte order");

namespace trainlab {
namespace fs = std::filesystem;
namespace {

constexpr int kFormatVersion = 1;
constexpr int kZstdLevel = 3;
constexpr char kIndexMagic[8] = {'T', 'L', 'R', 'S', 'I', 'D', 'X', '1'};
constexpr char kCacheMagic[8] = {'T', 'L', 'R', 'S', 'D', 'E', 'C', '1'};
constexpr uint32_t kIndexVersion = 1;
constexpr uint32_t kCacheVersion = 1;
constexpr size_t kIndexHeaderBytes = 24;
constexpr size_t kIndexEntryBytes = 32;
constexpr size_t kCacheHeaderBytes = 64;
constexpr int kColumns = 5;  // lengths, user features, items, categories, actions
constexpr const char* kColumnNames[kColumns] = {"lengths", "user features", "items", "categories", "actions"};
constexpr const char* kCacheName = "decoded_histories.bin";
constexpr double kMarkovFollowProbability = 0.8;
constexpr double kMaskProbabilityPerIntensity = 0.15;
constexpr double kNegativesPerIntensity = 32.0;

// ---- small helpers -------------------------------------------------------------------------

// Unbiased enough for n << 2^64 and identical on every platform (unlike <random> distributions).
int64_t uniform_index(std::mt19937_64& rng, int64_t n) {
  return static_cast<int64_t>((static_cast<unsigned __int128>(rng()) * static_cast<uint64_t>(n)) >> 64);
}
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

int64_t history_min_length(const RecsysDataSpec& spec) { return std::max<int64_t>(2, spec.mean_history / 4); }

std::string shard_name(int64_t shard) {
  char name[32];
  std::snprintf(name, sizeof name, "shard-%05lld.zst", static_cast<long long>(shard));
  return name;
}

template <class T>
void append_le(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}
template <class T>
T load_le(const char* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}
uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t unzigzag(uint64_t u) { return static_cast<int64_t>(u >> 1) ^ -static_cast<int64_t>(u & 1); }

// ---- spec, manifest ------------------------------------------------------------------------

void validate_spec(const RecsysDataSpec& s) {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw InputError("recsys data: " + what);
  };
  require(s.samples >= 1, "samples must be >= 1");
  require(s.items >= 2 && s.items <= std::numeric_limits<int32_t>::max() - 2, "items must be in [2, 2^31-3]");
  require(s.categories >= 1 && s.categories <= std::numeric_limits<int32_t>::max(),
          "categories must be >= 1");
  require(s.actions >= 1 && s.actions <= std::numeric_limits<int32_t>::max(), "actions must be >= 1");
  require(s.user_vocab >= 1 && s.user_vocab <= std::numeric_limits<int32_t>::max(),
          "user_vocab must be >= 1");
  require(s.user_features >= 0 && s.user_features <= 4096, "user_features must be in [0, 4096]");
  require(s.max_history >= 2 && s.max_history <= (1 << 20), "max_history must be in [2, 2^20]");
  require(s.mean_history >= 2 && s.mean_history <= s.max_history, "mean_history must be in [2, max_history]");
  require(s.records_per_block >= 1 && s.records_per_block <= (1 << 20),
          "records_per_block must be in [1, 2^20]");
  require(s.records_per_shard >= 1, "records_per_shard must be >= 1");
}

nlohmann::json spec_to_json(const RecsysDataSpec& s) {
  return {{"samples", s.samples},
          {"items", s.items},
          {"categories", s.categories},
          {"actions", s.actions},
          {"user_vocab", s.user_vocab},
          {"user_features", s.user_features},
          {"mean_history", s.mean_history},
          {"max_history", s.max_history},
          {"records_per_block", s.records_per_block},
          {"records_per_shard", s.records_per_shard},
          {"seed", s.seed}};
}

void require_folder(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw DataError(dir, "no such recsys dataset folder");
}

RecsysDataSpec read_manifest(const std::string& dir) {
  require_folder(dir);
  const std::string path = dir + "/manifest.json";
  std::error_code ec;
  if (!fs::exists(path, ec)) throw DataError(path, "missing manifest (not a prepared recsys dataset)");
  RecsysDataSpec s;
  try {
    const nlohmann::json manifest = parse_bounded_json(read_file(path), path);
    if (manifest.is_discarded()) throw DataError(path, "malformed recsys manifest: not valid JSON");
    if (manifest.at("kind") != "recsys") throw DataError(path, "not a recsys dataset manifest");
    if (manifest.at("format_version") != kFormatVersion) {
      throw DataError(path, "recsys format version " + manifest.at("format_version").dump() + ", expected " +
                                std::to_string(kFormatVersion));
    }
    const nlohmann::json& p = manifest.at("params");
    s.samples = p.at("samples").get<int64_t>();
    s.items = p.at("items").get<int64_t>();
    s.categories = p.at("categories").get<int64_t>();
    s.actions = p.at("actions").get<int64_t>();
    s.user_vocab = p.at("user_vocab").get<int64_t>();
    s.user_features = p.at("user_features").get<int64_t>();
    s.mean_history = p.at("mean_history").get<int64_t>();
    s.max_history = p.at("max_history").get<int64_t>();
    s.records_per_block = p.at("records_per_block").get<int64_t>();
    s.records_per_shard = p.at("records_per_shard").get<int64_t>();
    s.seed = p.at("seed").get<uint64_t>();
    validate_spec(s);
  } catch (const DataError&) {
    throw;
  } catch (const std::exception& e) {
    throw DataError(path, std::string("malformed recsys manifest: ") + e.what());
  }
  return s;
}

void validate_augment(const RecsysAugment& a) {
  if (a.seq_len < 1 || a.seq_len > (1 << 20))
    throw InputError("recsys augment: seq_len must be in [1, 2^20]");
  if (!std::isfinite(a.intensity) || a.intensity < 0 || a.intensity > 1000) {
    throw InputError("recsys augment: intensity must be in [0, 1000]");
  }
}

// ---- one user's history, generation and block encoding ---------------------------------------

struct UserHistory {
  std::vector<int32_t> features;    // user_features ids
  std::vector<int32_t> items;       // one per event
  std::vector<int32_t> categories;  // one per event
  std::vector<int32_t> actions;     // one per event
};

int64_t draw_history_length(std::mt19937_64& rng, const RecsysDataSpec& s) {
  // Minimum plus a gamma(2, theta) tail (sum of two exponentials) with mean mean_history, clamped.
  const int64_t lo = history_min_length(s);
  const double theta = static_cast<double>(s.mean_history - lo) / 2.0;
  const double tail = -theta * (std::log(1.0 - uniform01(rng)) + std::log(1.0 - uniform01(rng)));
  return std::min<int64_t>(s.max_history, lo + static_cast<int64_t>(std::llround(tail)));
}

void generate_user(std::mt19937_64& rng, const RecsysDataSpec& s, UserHistory& u) {
  u.features.resize(static_cast<size_t>(s.user_features));
  for (int32_t& f : u.features) f = static_cast<int32_t>(uniform_index(rng, s.user_vocab));
  const auto length = static_cast<size_t>(draw_history_length(rng, s));
  u.items.resize(length);
  u.categories.resize(length);
  u.actions.resize(length);
  int64_t item = uniform_index(rng, s.items);
  for (size_t e = 0; e < length; ++e) {
    if (e > 0) {
      item =
          uniform01(rng) < kMarkovFollowProbability ? (item * 31 + 7) % s.items : uniform_index(rng, s.items);
    }
    u.items[e] = static_cast<int32_t>(item);
    u.categories[e] = static_cast<int32_t>(item % s.categories);
    u.actions[e] = static_cast<int32_t>(uniform_index(rng, s.actions));
  }
}

std::string encode_block(const std::vector<UserHistory>& users, int64_t first_record) {
  std::string columns[kColumns];
  for (const UserHistory& u : users) {
    put_varint(columns[0], u.items.size());
    for (int32_t f : u.features) put_varint(columns[1], static_cast<uint64_t>(f));
    int64_t previous = 0;
    for (int32_t item : u.items) {
      put_varint(columns[2], zigzag(item - previous));
      previous = item;
    }
    for (int32_t c : u.categories) put_varint(columns[3], static_cast<uint64_t>(c));
    for (int32_t a : u.actions) put_varint(columns[4], static_cast<uint64_t>(a));
  }
  std::string block;
  put_varint(block, users.size());
  put_varint(block, static_cast<uint64_t>(first_record));
  for (const std::string& c : columns) put_varint(block, c.size());
  for (const std::string& c : columns) block += c;
  return block;
}

// Upper bound of a block's decompressed size: every varint at its 10-byte maximum.
uint64_t max_block_bytes(uint64_t records, const RecsysDataSpec& s) {
  const uint64_t per_user =
      1 + static_cast<uint64_t>(s.user_features) + 3 * static_cast<uint64_t>(s.max_history);
  return 10 * (2 + kColumns + records * per_user);
}

struct BlockEntry {
  uint32_t shard = 0;
  uint32_t records = 0;
  uint64_t first_record = 0;
  uint64_t offset_bytes = 0;
  uint32_t compressed_bytes = 0;
  uint32_t raw_bytes = 0;
};

void generate_dataset(const std::string& dir, const RecsysDataSpec& s) {
  std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  if (!cctx) throw std::bad_alloc();
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, kZstdLevel);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);

  std::mt19937_64 rng(s.seed);
  std::vector<BlockEntry> index;
  std::vector<UserHistory> users;
  std::string compressed;
  for (int64_t shard = 0, shard_first = 0; shard_first < s.samples;
       ++shard, shard_first += s.records_per_shard) {
    const int64_t shard_end = std::min(s.samples, shard_first + s.records_per_shard);
    std::string shard_bytes;
    for (int64_t first = shard_first; first < shard_end; first += s.records_per_block) {
      users.resize(static_cast<size_t>(std::min(s.records_per_block, shard_end - first)));
      for (UserHistory& u : users) generate_user(rng, s, u);
      const std::string raw = encode_block(users, first);
      compressed.resize(ZSTD_compressBound(raw.size()));
      const size_t n =
          ZSTD_compress2(cctx.get(), compressed.data(), compressed.size(), raw.data(), raw.size());
      if (ZSTD_isError(n))
        throw std::runtime_error(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
      if (raw.size() > std::numeric_limits<uint32_t>::max()) throw InputError("recsys data: block too large");
      BlockEntry entry;
      entry.shard = static_cast<uint32_t>(shard);
      entry.records = static_cast<uint32_t>(users.size());
      entry.first_record = static_cast<uint64_t>(first);
      entry.offset_bytes = shard_bytes.size();
      entry.compressed_bytes = static_cast<uint32_t>(n);
      entry.raw_bytes = static_cast<uint32_t>(raw.size());
      index.push_back(entry);
      shard_bytes.append(compressed.data(), n);
    }
    write_file_atomically(dir + "/" + shard_name(shard), shard_bytes);
  }

  std::string index_bytes(kIndexMagic, sizeof kIndexMagic);
  append_le<uint32_t>(index_bytes, kIndexVersion);
  append_le<uint32_t>(index_bytes, static_cast<uint32_t>(index.size()));
  append_le<uint64_t>(index_bytes, static_cast<uint64_t>(s.samples));
  for (const BlockEntry& e : index) {
    append_le(index_bytes, e.shard);
    append_le(index_bytes, e.records);
    append_le(index_bytes, e.first_record);
    append_le(index_bytes, e.offset_bytes);
    append_le(index_bytes, e.compressed_bytes);
    append_le(index_bytes, e.raw_bytes);
  }
  write_file_atomically(dir + "/index.bin", index_bytes);
}

// ---- block parsing ---------------------------------------------------------------------------

// A block's bytes failed validation; the caller adds the shard path and block position.
class CorruptBlock : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads bounds-checked varints from one column.
class ColumnReader {
 public:
  ColumnReader(const uint8_t* begin, const uint8_t* end, const char* name)
      : p_(begin), end_(end), name_(name) {}
  uint64_t next() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) throw CorruptBlock(std::string("truncated ") + name_ + " column");
      const uint8_t byte = *p_++;
      if (shift == 63 && byte > 1) throw CorruptBlock(std::string("varint overflow in ") + name_ + " column");
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    throw CorruptBlock(std::string("varint overflow in ") + name_ + " column");
  }
  // A value that must be below limit.
  uint64_t next_below(uint64_t limit, const char* what) {
    const uint64_t v = next();
    if (v >= limit) {
      throw CorruptBlock(std::string(what) + " " + std::to_string(v) + " out of range [0, " +
                         std::to_string(limit) + ")");
    }
    return v;
  }
  const uint8_t* position() const { return p_; }
  bool at_end() const { return p_ == end_; }
  const char* name() const { return name_; }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
  const char* name_;
};

// The first `records` users of a block, decoded column by column into flat arrays.
struct ParsedBlock {
  int64_t records = 0;
  std::vector<int64_t> event_start;  // records + 1 offsets into the event columns
  std::vector<int32_t> features;     // records x user_features
  std::vector<int32_t> items, categories, actions;

  void extract(int64_t record, int64_t user_features, UserHistory& out) const {
    const auto f0 = features.begin() + record * user_features;
    out.features.assign(f0, f0 + user_features);
    const auto e0 = static_cast<size_t>(event_start[static_cast<size_t>(record)]);
    const auto e1 = static_cast<size_t>(event_start[static_cast<size_t>(record) + 1]);
    out.items.assign(items.begin() + e0, items.begin() + e1);
    out.categories.assign(categories.begin() + e0, categories.begin() + e1);
    out.actions.assign(actions.begin() + e0, actions.begin() + e1);
  }
};

// A decompressed block's header checked against the index, and where each column lies (the
// columns are sized in the header). Throws CorruptBlock.
struct BlockColumns {
  uint64_t records = 0;
  const uint8_t* starts[kColumns] = {};
  uint64_t bytes[kColumns] = {};
  ColumnReader column(int c) const { return ColumnReader(starts[c], starts[c] + bytes[c], kColumnNames[c]); }
};

BlockColumns block_columns(const uint8_t* data, size_t size, const BlockEntry& entry) {
  BlockColumns out;
  ColumnReader header(data, data + size, "header");
  out.records = header.next();
  if (out.records != entry.records) {
    throw CorruptBlock("record count " + std::to_string(out.records) + ", index says " +
                       std::to_string(entry.records));
  }
  const uint64_t first = header.next();
  if (first != entry.first_record) {
    throw CorruptBlock("first record " + std::to_string(first) + ", index says " +
                       std::to_string(entry.first_record));
  }
  for (uint64_t& b : out.bytes) b = header.next();
  const uint8_t* column_begin = header.position();
  const auto payload_bytes = static_cast<uint64_t>(data + size - column_begin);
  uint64_t total_bytes = 0;
  for (int c = 0; c < kColumns; ++c) {
    if (out.bytes[c] > payload_bytes - total_bytes) {
      throw CorruptBlock(std::string(kColumnNames[c]) + " column size exceeds the block");
    }
    out.starts[c] = column_begin + total_bytes;
    total_bytes += out.bytes[c];
  }
  if (total_bytes != payload_bytes) throw CorruptBlock("column sizes do not add up to the block size");
  return out;
}

// Each user's history of item ids, stored as deltas from the user's previous item (zigzagged).
void decode_items(ColumnReader& items, const RecsysDataSpec& s, size_t users, ParsedBlock& out) {
  out.items.resize(static_cast<size_t>(out.event_start[users]));
  for (size_t r = 0; r < users; ++r) {
    int64_t previous = 0;
    for (auto e = static_cast<size_t>(out.event_start[r]); e < static_cast<size_t>(out.event_start[r + 1]);
         ++e) {
      const int64_t delta = unzigzag(items.next());
      if (delta <= -s.items || delta >= s.items || previous + delta < 0 || previous + delta >= s.items) {
        throw CorruptBlock("item delta " + std::to_string(delta) + " leaves [0, " + std::to_string(s.items) +
                           ")");
      }
      previous += delta;
      out.items[e] = static_cast<int32_t>(previous);
    }
  }
}

// Parses the first `needed` users of a decompressed block (the columns are sized in the header, so
// later users' bytes are skipped, not parsed). Throws CorruptBlock.
void parse_block(const uint8_t* data, size_t size, const BlockEntry& entry, int64_t needed,
                 const RecsysDataSpec& s, ParsedBlock& out) {
  const BlockColumns block = block_columns(data, size, entry);
  const auto n = static_cast<size_t>(needed);
  const auto f = static_cast<size_t>(s.user_features);
  out.records = needed;
  out.event_start.resize(n + 1);
  out.event_start[0] = 0;
  ColumnReader lengths = block.column(0);
  const int64_t min_length = 2;
  for (size_t r = 0; r < n; ++r) {
    const auto length = static_cast<int64_t>(lengths.next());
    if (length < min_length || length > s.max_history) {
      throw CorruptBlock("history length " + std::to_string(length) + " outside [2, " +
                         std::to_string(s.max_history) + "]");
    }
    out.event_start[r + 1] = out.event_start[r] + length;
  }
  const auto events = static_cast<size_t>(out.event_start[n]);

  ColumnReader features = block.column(1);
  out.features.resize(n * f);
  for (int32_t& v : out.features) {
    v = static_cast<int32_t>(features.next_below(static_cast<uint64_t>(s.user_vocab), "user feature"));
  }
  ColumnReader items = block.column(2);
  decode_items(items, s, n, out);
  ColumnReader categories = block.column(3);
  out.categories.resize(events);
  for (int32_t& v : out.categories) {
    v = static_cast<int32_t>(categories.next_below(static_cast<uint64_t>(s.categories), "category"));
  }
  ColumnReader actions = block.column(4);
  out.actions.resize(events);
  for (int32_t& v : out.actions) {
    v = static_cast<int32_t>(actions.next_below(static_cast<uint64_t>(s.actions), "action"));
  }
  if (static_cast<uint64_t>(needed) == block.records) {  // the whole block: every column must be used up
    for (const ColumnReader* reader : {&lengths, &features, &items, &categories, &actions}) {
      if (!reader->at_end())
        throw CorruptBlock(std::string("trailing bytes in ") + reader->name() + " column");
    }
  }
}

ZSTD_DCtx* thread_dctx() {
  struct Holder {
    ZSTD_DCtx* ctx = ZSTD_createDCtx();
    ~Holder() { ZSTD_freeDCtx(ctx); }
  };
  thread_local Holder holder;
  if (holder.ctx == nullptr) throw std::bad_alloc();
  return holder.ctx;
}

// ---- augmentation and collation (shared by both sources) --------------------------------------

struct AugmentedSample {
  std::vector<int64_t> items, categories, actions;  // seq_len each, left-padded
  std::vector<int64_t> negatives;                   // recsys_negatives(augment)
  int64_t target = 0;
};

void augment_sample(const UserHistory& user, std::mt19937_64 rng, const RecsysDataSpec& s,
                    const RecsysAugment& a, AugmentedSample& out) {
  const auto length = static_cast<int64_t>(user.items.size());  // >= 2, checked when read
  const int64_t seq_len = a.seq_len;
  const int64_t target_pos = 1 + uniform_index(rng, length - 1);  // [1, length - 1]
  const int64_t window = std::min(seq_len, target_pos);
  const int64_t pad = seq_len - window;
  out.items.assign(static_cast<size_t>(seq_len), recsys_pad_token(s.items));
  out.categories.assign(static_cast<size_t>(seq_len), 0);
  out.actions.assign(static_cast<size_t>(seq_len), 0);
  for (int64_t j = 0; j < window; ++j) {
    const auto src = static_cast<size_t>(target_pos - window + j);
    const auto dst = static_cast<size_t>(pad + j);
    out.items[dst] = user.items[src];
    out.categories[dst] = user.categories[src];
    out.actions[dst] = user.actions[src];
  }
  out.target = user.items[static_cast<size_t>(target_pos)];

  // Masking: every real input position but the last one.
  const double mask_probability = std::min(1.0, kMaskProbabilityPerIntensity * a.intensity);
  if (mask_probability > 0) {
    for (int64_t j = pad; j < seq_len - 1; ++j) {
      if (uniform01(rng) < mask_probability) out.items[static_cast<size_t>(j)] = recsys_mask_token(s.items);
    }
  }

  // Negatives: uniform items, rejecting any item of the user's whole history.
  const int64_t negatives = recsys_negatives(a);
  out.negatives.resize(static_cast<size_t>(negatives));
  if (negatives == 0) return;
  std::vector<int32_t> history(user.items);
  std::sort(history.begin(), history.end());
  history.erase(std::unique(history.begin(), history.end()), history.end());
  auto in_history = [&](int64_t item) {
    return std::binary_search(history.begin(), history.end(), static_cast<int32_t>(item));
  };
  int64_t attempts_left = 64 * negatives + 1024;
  for (int64_t& negative : out.negatives) {
    int64_t candidate = uniform_index(rng, s.items);
    while (in_history(candidate) && --attempts_left > 0) candidate = uniform_index(rng, s.items);
    if (in_history(candidate)) {
      // Rejection ran out (history covers most of the catalogue): take the next item not in it, or
      // the pad token when the history holds every item.
      int64_t step = 1;
      while (step < s.items && in_history((candidate + step) % s.items)) ++step;
      candidate = step < s.items ? (candidate + step) % s.items : recsys_pad_token(s.items);
    }
    negative = candidate;
  }
}

// Augments users (one per batch position) and collates them; charges the augment and collate
// stages to times and stores them in the batch.
HostBatch augment_and_collate(std::vector<UserHistory>& users, const BatchRequest& request,
                              const RecsysDataSpec& s, const RecsysAugment& a,
                              const BufferAllocator& allocate, StageClock& clock, StageTimes& times) {
  const auto batch_size = static_cast<int64_t>(users.size());
  std::vector<AugmentedSample> samples(users.size());
  for (int64_t i = 0; i < batch_size; ++i) {
    augment_sample(users[static_cast<size_t>(i)], sample_rng(request.augment_seed, request.first_position + i), s, a,
                   samples[static_cast<size_t>(i)]);
  }
  clock.charge(times.augment_ns);

  const int64_t seq_len = a.seq_len;
  const int64_t negatives = recsys_negatives(a);
  HostBatch batch;
  batch.samples = batch_size;
  batch.inputs.push_back(make_host_tensor(ElementType::kInt64, {batch_size, seq_len}, allocate));
  batch.inputs.push_back(make_host_tensor(ElementType::kInt64, {batch_size, seq_len}, allocate));
  batch.inputs.push_back(make_host_tensor(ElementType::kInt64, {batch_size, seq_len}, allocate));
  batch.inputs.push_back(make_host_tensor(ElementType::kInt64, {batch_size, s.user_features}, allocate));
  batch.inputs.push_back(make_host_tensor(ElementType::kInt64, {batch_size, negatives}, allocate));
  batch.targets = make_host_tensor(ElementType::kInt64, {batch_size}, allocate);
  int64_t* items = batch.inputs[0].as<int64_t>();
  int64_t* categories = batch.inputs[1].as<int64_t>();
  int64_t* actions = batch.inputs[2].as<int64_t>();
  int64_t* features = batch.inputs[3].as<int64_t>();
  int64_t* negative_ids = batch.inputs[4].as<int64_t>();
  int64_t* targets = batch.targets.as<int64_t>();
  for (int64_t i = 0; i < batch_size; ++i) {
    const AugmentedSample& sample = samples[static_cast<size_t>(i)];
    std::copy(sample.items.begin(), sample.items.end(), items + i * seq_len);
    std::copy(sample.categories.begin(), sample.categories.end(), categories + i * seq_len);
    std::copy(sample.actions.begin(), sample.actions.end(), actions + i * seq_len);
    const std::vector<int32_t>& f = users[static_cast<size_t>(i)].features;
    std::copy(f.begin(), f.end(), features + i * s.user_features);
    std::copy(sample.negatives.begin(), sample.negatives.end(), negative_ids + i * negatives);
    targets[i] = sample.target;
  }
  // Free the per-sample scratch inside the collate stage so the stages cover the whole call.
  std::vector<AugmentedSample>().swap(samples);
  std::vector<UserHistory>().swap(users);
  clock.charge(times.collate_ns);
  batch.stage_ns = times;
  return batch;
}

void check_indices(const BatchRequest& request, int64_t samples) {
  for (int64_t index : request.sample_indices) {
    if (index < 0 || index >= samples) {
      throw std::out_of_range("recsys sample index " + std::to_string(index) + " outside [0, " +
                              std::to_string(samples) + ")");
    }
  }
}

// ---- what both sources share ----------------------------------------------------------------

// A recsys source: the dataset's spec (its manifest) and the augmentation, checked when it opens,
// and a batch in its stages: the requested users' histories read (and decoded) by the source, then
// augmented and collated the same way whichever source read them.
class RecsysSource : public SampleSource {
 public:
  int64_t num_samples() const override { return spec_.samples; }

  HostBatch load_batch(const BatchRequest& request, const BufferAllocator& allocate) const override {
    StageClock clock;
    StageTimes times;
    check_indices(request, spec_.samples);
    std::vector<UserHistory> users = read_users(request, clock, times);
    return augment_and_collate(users, request, spec_, augment_, allocate, clock, times);
  }

 protected:
  RecsysSource(const std::string& dir, const RecsysAugment& augment)
      : spec_(read_manifest(dir)), augment_(augment) {
    validate_augment(augment_);
  }

  // The requested users' histories, in request order; charges the read (and decode) stages.
  virtual std::vector<UserHistory> read_users(const BatchRequest& request, StageClock& clock,
                                              StageTimes& times) const = 0;

  RecsysDataSpec spec_;
  RecsysAugment augment_;
};

// ---- the shard source ------------------------------------------------------------------------

class RecsysShardSource final : public RecsysSource {
 public:
  RecsysShardSource(const std::string& dir, const RecsysAugment& augment)
      : RecsysSource(dir, augment), dir_(dir) {
    read_index();
    open_shards();
  }
  ~RecsysShardSource() override {
    for (int fd : shard_fds_) ::close(fd);
  }
  RecsysShardSource(const RecsysShardSource&) = delete;
  RecsysShardSource& operator=(const RecsysShardSource&) = delete;

  std::string describe() const override {
    return "zstd shards: " + std::to_string(spec_.samples) + " users, mean history " +
           std::to_string(spec_.mean_history) + ", " + std::to_string(spec_.records_per_block) +
           " users/block, " + std::to_string(shard_paths_.size()) + " shards (" + dir_ + ")";
  }

  // Decodes every user in order and writes the decoded cache file (see the top of this file).
  void write_decoded_cache(const std::string& path) const {
    const auto h = static_cast<size_t>(spec_.max_history);
    const auto f = static_cast<size_t>(spec_.user_features);
    const size_t row_ints = 1 + f + 3 * h;
    std::string header(kCacheMagic, sizeof kCacheMagic);
    append_le<uint32_t>(header, kCacheVersion);
    append_le<uint32_t>(header, static_cast<uint32_t>(spec_.max_history));
    append_le<uint32_t>(header, static_cast<uint32_t>(spec_.user_features));
    append_le<uint32_t>(header, 0);
    append_le<uint64_t>(header, static_cast<uint64_t>(spec_.samples));
    append_le<uint64_t>(header, row_ints * sizeof(int32_t));
    append_le<uint64_t>(header, static_cast<uint64_t>(spec_.items));
    header.resize(kCacheHeaderBytes, '\0');

    // Streamed (the cache can be larger than memory) into prepare_derived_file's temporary name,
    // renamed into place when whole; a link planted there is not followed.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    std::unique_ptr<FILE, int (*)(FILE*)> out(fd >= 0 ? ::fdopen(fd, "wb") : nullptr, std::fclose);
    if (!out && fd >= 0) ::close(fd);
    if (!out) throw InputError("cannot write " + path + ": " + std::strerror(errno));
    auto write = [&](const void* data, size_t bytes) {
      if (std::fwrite(data, 1, bytes, out.get()) != bytes) {
        throw InputError("cannot write " + path + ": " + std::strerror(errno));
      }
    };
    write(header.data(), header.size());
    std::string compressed, raw;
    ParsedBlock parsed;
    UserHistory user;
    std::vector<int32_t> row(row_ints);
    for (size_t block = 0; block < blocks_.size(); ++block) {
      read_block(block, compressed);
      decode_block(block, compressed, blocks_[block].records, raw, parsed);
      for (int64_t r = 0; r < parsed.records; ++r) {
        parsed.extract(r, spec_.user_features, user);
        std::fill(row.begin(), row.end(), 0);
        row[0] = static_cast<int32_t>(user.items.size());
        std::copy(user.features.begin(), user.features.end(), row.begin() + 1);
        std::copy(user.items.begin(), user.items.end(), row.begin() + static_cast<ptrdiff_t>(1 + f));
        std::copy(user.categories.begin(), user.categories.end(),
                  row.begin() + static_cast<ptrdiff_t>(1 + f + h));
        std::copy(user.actions.begin(), user.actions.end(),
                  row.begin() + static_cast<ptrdiff_t>(1 + f + 2 * h));
        write(row.data(), row.size() * sizeof(int32_t));
      }
    }
    if (std::fflush(out.get()) != 0) throw InputError("cannot write " + path + ": " + std::strerror(errno));
  }

 private:
  std::vector<UserHistory> read_users(const BatchRequest& request, StageClock& clock,
                                      StageTimes& times) const override {
    const size_t batch_size = request.sample_indices.size();
    // (block, position in batch), grouped by block so each block is read and decoded once.
    std::vector<std::pair<size_t, size_t>> order(batch_size);
    for (size_t i = 0; i < batch_size; ++i) order[i] = {block_of(request.sample_indices[i]), i};
    std::sort(order.begin(), order.end());

    std::vector<UserHistory> users(batch_size);
    {
      std::string compressed, raw;
      ParsedBlock parsed;
      for (size_t begin = 0; begin < order.size();) {
        const size_t block = order[begin].first;
        size_t end = begin;
        int64_t needed = 0;
        for (; end < order.size() && order[end].first == block; ++end) {
          const int64_t local =
              request.sample_indices[order[end].second] - static_cast<int64_t>(blocks_[block].first_record);
          needed = std::max(needed, local + 1);
        }
        read_block(block, compressed);
        clock.charge(times.read_ns);
        decode_block(block, compressed, needed, raw, parsed);
        for (size_t k = begin; k < end; ++k) {
          const size_t position = order[k].second;
          parsed.extract(request.sample_indices[position] - static_cast<int64_t>(blocks_[block].first_record),
                         spec_.user_features, users[position]);
        }
        clock.charge(times.decode_ns);
        begin = end;
      }
    }  // freeing the block buffers counts as decode
    clock.charge(times.decode_ns);
    return users;
  }

  void read_index() {
    const std::string path = dir_ + "/index.bin";
    std::error_code ec;
    if (!fs::exists(path, ec)) throw DataError(path, "missing recsys block index");
    const std::string bytes = read_file(path);
    auto malformed = [&](const std::string& what) {
      return DataError(path, "malformed recsys index: " + what);
    };
    if (bytes.size() < kIndexHeaderBytes || std::memcmp(bytes.data(), kIndexMagic, sizeof kIndexMagic) != 0) {
      throw malformed("bad header");
    }
    if (load_le<uint32_t>(bytes.data() + 8) != kIndexVersion) throw malformed("unknown version");
    const uint32_t block_count = load_le<uint32_t>(bytes.data() + 12);
    const uint64_t records = load_le<uint64_t>(bytes.data() + 16);
    if (bytes.size() != kIndexHeaderBytes + static_cast<size_t>(block_count) * kIndexEntryBytes) {
      throw malformed(std::to_string(bytes.size()) + " bytes for " + std::to_string(block_count) + " blocks");
    }
    if (records != static_cast<uint64_t>(spec_.samples)) {
      throw malformed(std::to_string(records) + " records, manifest says " + std::to_string(spec_.samples));
    }
    const auto shards =
        static_cast<size_t>((spec_.samples + spec_.records_per_shard - 1) / spec_.records_per_shard);
    shard_bytes_.assign(shards, 0);
    uint64_t next_record = 0;
    for (uint32_t b = 0; b < block_count; ++b) {
      const char* p = bytes.data() + kIndexHeaderBytes + static_cast<size_t>(b) * kIndexEntryBytes;
      BlockEntry e;
      e.shard = load_le<uint32_t>(p);
      e.records = load_le<uint32_t>(p + 4);
      e.first_record = load_le<uint64_t>(p + 8);
      e.offset_bytes = load_le<uint64_t>(p + 16);
      e.compressed_bytes = load_le<uint32_t>(p + 24);
      e.raw_bytes = load_le<uint32_t>(p + 28);
      const std::string where = "block " + std::to_string(b) + ": ";
      const uint64_t rps = static_cast<uint64_t>(spec_.records_per_shard);
      if (e.first_record != next_record || e.records == 0 ||
          e.records > static_cast<uint64_t>(spec_.records_per_block) ||
          e.first_record + e.records > records) {
        throw malformed(where + "records do not follow on");
      }
      if (e.shard >= shards || e.first_record / rps != e.shard ||
          (e.first_record + e.records - 1) / rps != e.shard) {
        throw malformed(where + "wrong shard");
      }
      if (e.offset_bytes != shard_bytes_[e.shard] || e.compressed_bytes == 0 ||
          e.raw_bytes > max_block_bytes(e.records, spec_)) {
        throw malformed(where + "bad offset or size");
      }
      shard_bytes_[e.shard] += e.compressed_bytes;
      next_record += e.records;
      blocks_.push_back(e);
      first_records_.push_back(static_cast<int64_t>(e.first_record));
    }
    if (next_record != records) throw malformed("blocks hold " + std::to_string(next_record) + " records");
  }

  void open_shards() {
    for (size_t shard = 0; shard < shard_bytes_.size(); ++shard) {
      const std::string path = dir_ + "/" + shard_name(static_cast<int64_t>(shard));
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        const std::string why = std::strerror(errno);
        for (int open_fd : shard_fds_) ::close(open_fd);
        throw DataError(path, "cannot open shard: " + why);
      }
      shard_fds_.push_back(fd);
      shard_paths_.push_back(path);
      struct stat st {};
      if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != shard_bytes_[shard]) {
        const std::string size = std::to_string(static_cast<uint64_t>(st.st_size));
        for (int open_fd : shard_fds_) ::close(open_fd);
        throw DataError(
            path, std::string("corrupt shard: ") +
                      (static_cast<uint64_t>(st.st_size) < shard_bytes_[shard] ? "truncated, " : "") + size +
                      " bytes, index expects " + std::to_string(shard_bytes_[shard]));
      }
    }
  }

  size_t block_of(int64_t record) const {
    const auto it = std::upper_bound(first_records_.begin(), first_records_.end(), record);
    return static_cast<size_t>(it - first_records_.begin()) - 1;
  }

  // Read stage: the block's compressed bytes.
  void read_block(size_t block, std::string& compressed) const {
    const BlockEntry& e = blocks_[block];
    compressed.resize(e.compressed_bytes);
    size_t done_bytes = 0;
    while (done_bytes < compressed.size()) {
      const ssize_t n =
          ::pread(shard_fds_[e.shard], compressed.data() + done_bytes, compressed.size() - done_bytes,
                  static_cast<off_t>(e.offset_bytes + done_bytes));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0)
        throw DataError(shard_paths_[e.shard], std::string("cannot read shard: ") + std::strerror(errno));
      if (n == 0) {
        throw DataError(shard_paths_[e.shard], "corrupt shard: truncated (block " + std::to_string(block) +
                                                   " ends at byte " +
                                                   std::to_string(e.offset_bytes + e.compressed_bytes) + ")");
      }
      done_bytes += static_cast<size_t>(n);
    }
  }

  // Decode stage: decompress (checksum verified) and parse the first `needed` users.
  void decode_block(size_t block, const std::string& compressed, int64_t needed, std::string& raw,
                    ParsedBlock& parsed) const {
    const BlockEntry& e = blocks_[block];
    auto corrupt = [&](const std::string& what) {
      return DataError(shard_paths_[e.shard], "corrupt shard: block " + std::to_string(block) + " at byte " +
                                                  std::to_string(e.offset_bytes) + ": " + what);
    };
    raw.resize(e.raw_bytes);
    const size_t n =
        ZSTD_decompressDCtx(thread_dctx(), raw.data(), raw.size(), compressed.data(), compressed.size());
    if (ZSTD_isError(n)) throw corrupt(std::string("zstd: ") + ZSTD_getErrorName(n));
    if (n != raw.size()) {
      throw corrupt("decompressed " + std::to_string(n) + " bytes, index says " + std::to_string(raw.size()));
    }
    try {
      parse_block(reinterpret_cast<const uint8_t*>(raw.data()), raw.size(), e, needed, spec_, parsed);
    } catch (const CorruptBlock& error) {
      throw corrupt(error.what());
    }
  }

  std::string dir_;
  std::vector<BlockEntry> blocks_;
  std::vector<int64_t> first_records_;  // blocks_[i].first_record, for lookup
  std::vector<uint64_t> shard_bytes_;   // expected size of each shard
  std::vector<std::string> shard_paths_;
  std::vector<int> shard_fds_;
};

// ---- the decoded cache source ----------------------------------------------------------------

class RecsysCacheSource final : public RecsysSource {
 public:
  RecsysCacheSource(const std::string& dir, const RecsysAugment& augment)
      : RecsysSource(dir, augment), path_(dir + "/" + kCacheName) {
    std::error_code ec;
    if (!fs::exists(path_, ec)) {
      throw DataError(path_, "missing decoded cache (prepare_recsys_decoded_cache builds it)");
    }
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw DataError(path_, std::string("cannot open decoded cache: ") + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      ::close(fd);
      throw DataError(path_, std::string("cannot stat decoded cache: ") + std::strerror(errno));
    }
    size_bytes_ = static_cast<size_t>(st.st_size);
    const size_t h = static_cast<size_t>(spec_.max_history), f = static_cast<size_t>(spec_.user_features);
    row_bytes_ = (1 + f + 3 * h) * sizeof(int32_t);
    const size_t expected_bytes = kCacheHeaderBytes + static_cast<size_t>(spec_.samples) * row_bytes_;
    if (size_bytes_ < kCacheHeaderBytes) {
      ::close(fd);
      throw DataError(path_, "truncated decoded cache: " + std::to_string(size_bytes_) + " bytes");
    }
    void* map = ::mmap(nullptr, size_bytes_, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED)
      throw DataError(path_, std::string("cannot mmap decoded cache: ") + std::strerror(errno));
    base_ = static_cast<const char*>(map);
    try {
      const char* p = base_;
      if (std::memcmp(p, kCacheMagic, sizeof kCacheMagic) != 0)
        throw DataError(path_, "not a recsys decoded cache");
      if (load_le<uint32_t>(p + 8) != kCacheVersion) throw DataError(path_, "unknown decoded cache version");
      if (load_le<uint32_t>(p + 12) != static_cast<uint64_t>(spec_.max_history) ||
          load_le<uint32_t>(p + 16) != static_cast<uint64_t>(spec_.user_features) ||
          load_le<uint64_t>(p + 24) != static_cast<uint64_t>(spec_.samples) ||
          load_le<uint64_t>(p + 32) != row_bytes_ ||
          load_le<uint64_t>(p + 40) != static_cast<uint64_t>(spec_.items)) {
        throw DataError(path_, "decoded cache header does not match the dataset manifest");
      }
      if (size_bytes_ != expected_bytes) {
        throw DataError(
            path_, std::string(size_bytes_ < expected_bytes ? "truncated decoded cache: "
                                                            : "decoded cache has the wrong size: ") +
                       std::to_string(size_bytes_) + " bytes, expected " + std::to_string(expected_bytes));
      }
    } catch (...) {
      ::munmap(const_cast<char*>(base_), size_bytes_);
      throw;
    }
  }
  ~RecsysCacheSource() override { ::munmap(const_cast<char*>(base_), size_bytes_); }
  RecsysCacheSource(const RecsysCacheSource&) = delete;
  RecsysCacheSource& operator=(const RecsysCacheSource&) = delete;

  std::string describe() const override {
    return "decoded recsys cache: " + std::to_string(spec_.samples) + " users, max history " +
           std::to_string(spec_.max_history) + ", " + std::to_string(row_bytes_) + "-byte rows (" + path_ +
           ")";
  }

 private:
  std::vector<UserHistory> read_users(const BatchRequest& request, StageClock& clock,
                                      StageTimes& times) const override {
    std::vector<UserHistory> users(request.sample_indices.size());
    for (size_t i = 0; i < users.size(); ++i) copy_row(request.sample_indices[i], users[i]);
    clock.charge(times.read_ns);  // nothing to decode: decode_ns stays 0
    return users;
  }

  // Read stage: one row out of the mapping, checked so a damaged cache cannot index out of bounds.
  void copy_row(int64_t index, UserHistory& user) const {
    const auto h = static_cast<size_t>(spec_.max_history), f = static_cast<size_t>(spec_.user_features);
    const auto* row =
        reinterpret_cast<const int32_t*>(base_ + kCacheHeaderBytes + static_cast<size_t>(index) * row_bytes_);
    const int32_t length = row[0];
    auto corrupt = [&](const std::string& what) {
      return DataError(path_, "corrupt decoded cache: user " + std::to_string(index) + ": " + what);
    };
    if (length < 2 || length > spec_.max_history) throw corrupt("history length " + std::to_string(length));
    const auto n = static_cast<size_t>(length);
    user.features.assign(row + 1, row + 1 + f);
    user.items.assign(row + 1 + f, row + 1 + f + n);
    user.categories.assign(row + 1 + f + h, row + 1 + f + h + n);
    user.actions.assign(row + 1 + f + 2 * h, row + 1 + f + 2 * h + n);
    for (int32_t v : user.features) {
      if (v < 0 || v >= spec_.user_vocab) throw corrupt("user feature " + std::to_string(v));
    }
    for (size_t e = 0; e < n; ++e) {
      if (user.items[e] < 0 || user.items[e] >= spec_.items || user.categories[e] < 0 ||
          user.categories[e] >= spec_.categories || user.actions[e] < 0 || user.actions[e] >= spec_.actions) {
        throw corrupt("event " + std::to_string(e) + " out of range");
      }
    }
  }

  std::string path_;
  const char* base_ = nullptr;
  size_t size_bytes_ = 0;
  size_t row_bytes_ = 0;
};

}  // namespace

int64_t recsys_negatives(const RecsysAugment& augment) {
  return std::max<int64_t>(0, static_cast<int64_t>(std::llround(kNegativesPerIntensity * augment.intensity)));
}

PreparedDataset prepare_recsys_dataset(const std::string& data_root, const RecsysDataSpec& spec) {
  validate_spec(spec);
  return prepare_dataset(data_root, "recsys", kFormatVersion, spec_to_json(spec),
                         [&](const std::string& tmp_dir) { generate_dataset(tmp_dir, spec); });
}

std::string prepare_recsys_decoded_cache(const std::string& dataset_dir) {
  require_folder(dataset_dir);
  return prepare_derived_file(dataset_dir, kCacheName, [&](const std::string& tmp_path) {
    const RecsysShardSource shards(dataset_dir, RecsysAugment{});
    shards.write_decoded_cache(tmp_path);
  });
}

std::unique_ptr<SampleSource> open_recsys_shard_source(const std::string& dataset_dir,
                                                       const RecsysAugment& augment) {
  return std::make_unique<RecsysShardSource>(dataset_dir, augment);
}

std::unique_ptr<SampleSource> open_recsys_cache_source(const std::string& dataset_dir,
                                                       const RecsysAugment& augment) {
  return std::make_unique<RecsysCacheSource>(dataset_dir, augment);
}

}  // namespace trainlab
