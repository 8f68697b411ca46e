// A trace file or pipe as a std::streambuf of decompressed bytes: zlib's inflate over raw reads
// (not gzread, which drops the bytes of a call that ends in a bad trailer, so a corrupt CRC read as
// "after 0 decompressed bytes"), and the byte limits checked on each chunk before the parser sees it.
#include "profiler/trace_byte_stream.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/untrusted_input.h"

namespace trainlab {
namespace {

constexpr size_t kChunkBytes = size_t{1} << 18;
constexpr size_t kHeadBytes = 8;  // what non_json_encoding looks at

void end_inflate(z_stream_s* zs) {
  if (zs == nullptr) return;
  inflateEnd(zs);
  delete zs;
}

// What a byte is to the lexical limits: part of a token, whitespace, or a byte that ends a run.
enum ByteClass : uint8_t { kToken, kBlank, kStructural, kQuote, kBackslash };
struct ByteClasses {
  uint8_t of[256] = {};  // kToken
  constexpr ByteClasses() {
    for (const unsigned char c : {' ', '\t', '\n', '\r'}) of[c] = kBlank;
    for (const unsigned char c : {'{', '}', '[', ']', ',', ':'}) of[c] = kStructural;
    of[static_cast<unsigned char>('"')] = kQuote;
    of[static_cast<unsigned char>('\\')] = kBackslash;
  }
};
constexpr ByteClasses kByteClasses;
constexpr const uint8_t* kByteClass = kByteClasses.of;

std::string raise_hint(const char* variable) {
  return ": past the limit (set " + std::string(variable) + " to raise it)";
}

}  // namespace

TraceByteStream::TraceByteStream(const std::string& path, const TraceLimits& limits)
    : path_(path), limits_(limits), zlib_(nullptr, end_inflate), in_(kChunkBytes), chunk_(kChunkBytes) {
  // A FIFO nobody writes to reads as empty instead of blocking open() for ever.
  struct stat info {};
  fd_ = open_for_reading(path, &info);
  if (fd_ < 0) {
    throw InputError(path + ": cannot open trace: " +
                     (errno == EISDIR ? std::string("it is a directory") : std::strerror(errno)));
  }
  from_pipe_ = S_ISFIFO(info.st_mode);
  const char* refused = !S_ISREG(info.st_mode) && !from_pipe_ && !S_ISCHR(info.st_mode)
                            ? "not a regular file, pipe or device"
                        : ::isatty(fd_) ? "it is a terminal; pipe the trace in or name its file"
                                        : nullptr;
  if (refused != nullptr) {
    ::close(fd_);
    throw InputError(path + ": cannot open trace: " + refused);
  }
  if (S_ISREG(info.st_mode) && info.st_size > limits_.max_bytes) {
    ::close(fd_);
    throw InputError(path + ": " + bytes_limit_text(info.st_size) + " on disk, more than " +
                     bytes_limit_text(limits_.max_bytes) + raise_hint(kMaxTraceGbVariable));
  }
  // Gzip or plain, by the first two bytes (a pipe may hand them over one at a time).
  while (in_len_ < 2 && read_more()) {
  }
  gzipped_ = in_len_ >= 2 && static_cast<unsigned char>(in_[0]) == 0x1f &&
             static_cast<unsigned char>(in_[1]) == 0x8b;
  if (gzipped_) {
    zlib_.reset(new z_stream_s{});
    if (inflateInit2(zlib_.get(), 15 + 16) != Z_OK) {  // 15 + 16: a gzip wrapper, the largest window
      zlib_.reset();
      ::close(fd_);
      throw InputError(path + ": cannot open trace: out of memory");
    }
  }
}

TraceByteStream::~TraceByteStream() {
  if (fd_ >= 0) ::close(fd_);
}

std::string TraceByteStream::encoding_problem() const {
  return non_json_encoding(head_.data(), head_.size(), gzipped_ ? "the decompressed data" : "the file");
}

void TraceByteStream::drain() {
  draining_ = true;
  while (underflow() != traits_type::eof()) setg(eback(), egptr(), egptr());
}

TraceByteStream::int_type TraceByteStream::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  if (!error_.empty() || at_end_) return traits_type::eof();
  const size_t got = next_bytes(chunk_.data(), chunk_.size());
  if (bytes_read_ + static_cast<int64_t>(got) > limits_.max_bytes) {
    at_end_ = true;
    if (!draining_) {
      error_ = "more than " + bytes_limit_text(limits_.max_bytes) + (gzipped_ ? " decompressed" : "") +
               raise_hint(kMaxTraceGbVariable);
    }
    return traits_type::eof();
  }
  if (!draining_ && !scan(chunk_.data(), got)) return traits_type::eof();
  bytes_read_ += static_cast<int64_t>(got);
  if (problem_ != Problem::kNone) error_ = problem_text();  // after the count: it includes this chunk
  if (got == 0) {
    at_end_ = true;
    return traits_type::eof();
  }
  setg(chunk_.data(), chunk_.data(), chunk_.data() + got);
  return traits_type::to_int_type(*gptr());
}

size_t TraceByteStream::next_bytes(char* out, size_t capacity) {
  if (problem_ != Problem::kNone) return 0;
  if (gzipped_) return inflate_into(out, capacity);
  if (in_pos_ == in_len_ && !read_more()) return 0;
  const size_t n = std::min(capacity, in_len_ - in_pos_);
  std::memcpy(out, in_.data() + in_pos_, n);
  in_pos_ += n;
  return n;
}

// Inflates until some output is made, the input ends, or zlib fails (the output made before a
// failure is kept: a bad trailer comes after all the data).
size_t TraceByteStream::inflate_into(char* out, size_t capacity) {
  z_stream_s& zs = *zlib_;
  zs.next_out = reinterpret_cast<Bytef*>(out);
  zs.avail_out = static_cast<uInt>(capacity);
  while (zs.avail_out == capacity && problem_ == Problem::kNone && !at_end_) {
    if (in_pos_ == in_len_ && !read_more()) {
      if (problem_ == Problem::kNone) {
        problem_ = Problem::kTruncated;
        problem_detail_ = "unexpected end of file";
      }
      break;
    }
    zs.next_in = reinterpret_cast<Bytef*>(in_.data() + in_pos_);
    zs.avail_in = static_cast<uInt>(in_len_ - in_pos_);
    const int status = inflate(&zs, Z_NO_FLUSH);
    in_pos_ = in_len_ - zs.avail_in;
    if (status == Z_STREAM_END)
      start_next_member();
    else if (status != Z_OK && status != Z_BUF_ERROR)
      fail_zlib(status);
  }
  return capacity - zs.avail_out;
}

// After a gzip member: another one follows (concatenated gzip files read as one), or the stream
// ends; bytes after the last member are ignored, as gzip -d and zlib's gzread do.
void TraceByteStream::start_next_member() {
  while (in_len_ - in_pos_ < 2 && read_more()) {
  }
  const bool another = in_len_ - in_pos_ >= 2 && static_cast<unsigned char>(in_[in_pos_]) == 0x1f &&
                       static_cast<unsigned char>(in_[in_pos_ + 1]) == 0x8b;
  if (another)
    inflateReset(zlib_.get());
  else
    at_end_ = problem_ == Problem::kNone;
}

void TraceByteStream::fail_zlib(int status) {
  const std::string message = zlib_->msg != nullptr ? zlib_->msg : "zlib error " + std::to_string(status);
  problem_detail_ = message;
  if (status == Z_MEM_ERROR)
    problem_ = Problem::kMemory;
  else if (message == "incorrect data check" || message == "incorrect length check")
    problem_ = Problem::kTrailer;
  else
    problem_ = Problem::kCorrupt;
}

bool TraceByteStream::read_more() {
  if (in_pos_ > 0) {  // keep what is left at the front
    std::memmove(in_.data(), in_.data() + in_pos_, in_len_ - in_pos_);
    in_len_ -= in_pos_;
    in_pos_ = 0;
  }
  for (;;) {
    const ssize_t got = ::read(fd_, in_.data() + in_len_, in_.size() - in_len_);
    if (got > 0) {
      in_len_ += static_cast<size_t>(got);
      return true;
    }
    if (got == 0) return false;
    if (errno == EINTR) continue;
    problem_ = Problem::kRead;
    problem_detail_ = std::strerror(errno);
    return false;
  }
}

std::string TraceByteStream::problem_text() const {
  const std::string after = " after " + std::to_string(bytes_read_) + " decompressed bytes";
  switch (problem_) {
    case Problem::kNone:
      return "";
    case Problem::kRead:
      return "read error: " + problem_detail_ + " after " + std::to_string(bytes_read_) + " bytes";
    case Problem::kTruncated:
      return "truncated gzip stream (" + problem_detail_ + ")" + after;
    case Problem::kCorrupt:
      return "corrupt gzip stream (" + problem_detail_ + ")" + after;
    case Problem::kMemory:
      return "out of memory decompressing" + after;
    case Problem::kTrailer:
      return "corrupt gzip stream: all " + std::to_string(bytes_read_) + " bytes decompressed, but the " +
             (problem_detail_ == "incorrect data check" ? "CRC-32" : "length") +
             " in the gzip trailer does not match them (" + problem_detail_ + "): the data is damaged";
  }
  return "";
}

// Inside a string, its bytes as written (escapes included); outside, a run of whitespace, or a
// number or word (true, false, null, or a typo), each ended by a structural character or by the
// other kind. Byte classes from a table, runs measured a stretch at a time: this sees every byte.
bool TraceByteStream::scan(const char* data, size_t size) {
  if (head_.size() < kHeadBytes) head_.append(data, std::min(size, kHeadBytes - head_.size()));
  if (first_nul_offset_ < 0) {
    const void* nul = std::memchr(data, '\0', size);
    if (nul != nullptr) first_nul_offset_ = bytes_read_ + (static_cast<const char*>(nul) - data);
  }
  const int64_t max = limits_.max_token_bytes;
  size_t i = 0;
  while (i < size) {
    size_t j = i;
    if (in_string_) {
      if (escaped_) escaped_ = false, ++j;  // the byte after a backslash, whatever it is
      while (j < size && kByteClass[static_cast<unsigned char>(data[j])] != kQuote &&
             kByteClass[static_cast<unsigned char>(data[j])] != kBackslash) {
        ++j;
      }
    } else {
      const uint8_t run_class = run_blank_ ? kBlank : kToken;
      while (j < size && kByteClass[static_cast<unsigned char>(data[j])] == run_class) ++j;
    }
    run_bytes_ += static_cast<int64_t>(j - i);
    if (run_bytes_ > max) return fail_token(j - static_cast<size_t>(run_bytes_ - max));
    if (j == size) break;
    const uint8_t byte_class = kByteClass[static_cast<unsigned char>(data[j])];
    if (in_string_ && byte_class == kBackslash) {
      escaped_ = true;
      if (++run_bytes_ > max) return fail_token(j);
    } else if (!in_string_ && byte_class <= kBlank) {  // whitespace gives way to a token, or back
      run_blank_ = byte_class == kBlank;
      run_bytes_ = 0;
      i = j;  // counted in the next run
      continue;
    } else {  // a quote opens or closes a string; outside one, a structural character ends the run
      in_string_ = byte_class == kQuote ? !in_string_ : false;
      run_bytes_ = 0;
      run_blank_ = true;
    }
    i = j + 1;
  }
  return true;
}

bool TraceByteStream::fail_token(size_t index) {
  const int64_t max = limits_.max_token_bytes;
  const std::string what = in_string_   ? "a string longer than " + bytes_limit_text(max)
                           : run_blank_ ? "more than " + bytes_limit_text(max) + " of whitespace in a row"
                                        : "a number or word longer than " + bytes_limit_text(max);
  error_ = what + " at byte " + std::to_string(bytes_read_ + static_cast<int64_t>(index) + 1) +
           (gzipped_ ? " (decompressed)" : "") + raise_hint(kMaxStringMbVariable);
  return false;
}

}  // namespace trainlab
