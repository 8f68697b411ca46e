// The bytes of a trace file or pipe as the importer's JSON parser reads them: gunzipped when they
// start with gzip's magic bytes (told by content, not by name), plain otherwise, chunk by chunk,
// with the importer's byte limits checked as the chunks stream in, before the parser spends memory
// on them: the decompressed size, and the longest string, number or run of whitespace (nlohmann's
// lexer holds a whole token, whitespace before it included, in memory). Read, gzip and limit
// errors end the stream early and are kept for the importer to report. No LibTorch.
#pragma once

#include <cstdint>
#include <memory>
#include <streambuf>
#include <string>
#include <vector>

#include "profiler/chrome_trace.h"

struct z_stream_s;  // zlib's, kept out of this header

namespace trainlab {

class TraceByteStream : public std::streambuf {
 public:
  // Throws InputError naming the path when it cannot be opened, is a folder or a terminal, or is
  // a file larger than limits.max_bytes.
  TraceByteStream(const std::string& path, const TraceLimits& limits);
  ~TraceByteStream() override;
  TraceByteStream(const TraceByteStream&) = delete;
  TraceByteStream& operator=(const TraceByteStream&) = delete;

  bool gzipped() const { return gzipped_; }
  bool from_pipe() const { return from_pipe_; }
  int64_t bytes_read() const { return bytes_read_; }  // decompressed bytes handed to the parser
  // What ended the stream early, without the path: "corrupt gzip stream (...) after N decompressed
  // bytes", "a string longer than 16 MiB at byte N ...: past the limit (set ... to raise it)". Empty if
  // nothing.
  const std::string& error() const { return error_; }
  // Why the first bytes cannot be UTF-8 JSON (NUL bytes, UTF-16, UTF-32), or empty.
  std::string encoding_problem() const;
  // Offset (from 0) of the first NUL byte handed to the parser (nlohmann reads NUL as the end of
  // input), or -1.
  int64_t first_nul_offset() const { return first_nul_offset_; }
  // Reads on to the end (chunk by chunk, nothing kept, up to the size limit, lexical limits not
  // checked), so that gzip corruption later in the stream is reported rather than the JSON error
  // it caused first.
  void drain();

 protected:
  int_type underflow() override;

 private:
  enum class Problem { kNone, kRead, kTruncated, kCorrupt, kTrailer, kMemory };

  size_t next_bytes(char* out, size_t capacity);  // 0 at the end or on a problem
  size_t inflate_into(char* out, size_t capacity);
  void start_next_member();
  bool read_more();  // raw bytes into in_; false at the end of the input or on a read error
  bool scan(const char* data, size_t size);  // the lexical limits; false (error_ set) when passed
  bool fail_token(size_t index);             // error_ for the token passing the limit at data[index]
  void fail_zlib(int status);
  std::string problem_text() const;

  std::string path_;
  TraceLimits limits_;
  int fd_ = -1;
  std::unique_ptr<z_stream_s, void (*)(z_stream_s*)> zlib_;
  std::vector<char> in_;  // raw bytes read, in_[in_pos_, in_len_) not yet used
  size_t in_pos_ = 0, in_len_ = 0;
  std::vector<char> chunk_;  // the bytes handed to the parser
  bool gzipped_ = false, from_pipe_ = false, at_end_ = false, draining_ = false;
  int64_t bytes_read_ = 0;
  std::string head_;  // the first 8 bytes
  int64_t first_nul_offset_ = -1;
  Problem problem_ = Problem::kNone;
  std::string problem_detail_;  // zlib's message or strerror
  std::string error_;
  // Lexical state: inside a string (and after a backslash there), or in a run of whitespace (else
  // of a number or word), and that string's or run's bytes so far.
  bool in_string_ = false, escaped_ = false, run_blank_ = true;
  int64_t run_bytes_ = 0;
};

}  // namespace trainlab
