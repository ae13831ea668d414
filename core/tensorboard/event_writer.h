// TensorBoard event files for scalar curves (loss, lr, top-1/top-5, images/s),
// readable by `tensorboard --logdir runs/`.
//
// Format (TensorFlow's tensorflow/core/util/events_writer.cc and
// tensorflow/core/lib/io/record_writer.cc): a file named
// events.out.tfevents.<unix seconds>.<hostname> holding TFRecords, each
//   uint64 length (little endian) | uint32 masked_crc32c(length bytes)
//   | payload | uint32 masked_crc32c(payload)
// whose payload is a serialized Event (core/tensorboard/event.proto). The
// first record is Event{wall_time, step 0, file_version "brain.Event:2"}; each
// add_scalar() appends Event{wall_time, step, Summary{Value{tag, simple_value}}}.
#pragma once
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace vt {

// One TFRecord: the framing above around payload.
std::string tfrecord_frame(const std::string& payload);

class TensorBoardWriter {
 public:
  // Creates dir (and parents) if needed and a new event file in it. A file
  // of the same name (two writers within one second) is never overwritten: a
  // numeric suffix is appended instead, which TensorBoard still reads since it
  // matches any file name containing "tfevents". Throws std::runtime_error
  // naming the directory/file when either cannot be created.
  explicit TensorBoardWriter(const std::string& dir);
  // Flushes and closes; never throws.
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // Appends one scalar. TensorBoard stores simple_value as float32, so value
  // is rounded to float. wall_time is the current time (seconds since epoch).
  // Throws std::invalid_argument on an empty tag, std::runtime_error naming
  // the file when the write fails. Thread-safe.
  void add_scalar(const std::string& tag, double value, int64_t step);
  // Several scalars of one step in a single Event (one record).
  void add_scalars(const std::vector<std::pair<std::string, double>>& scalars, int64_t step);
  // Marks a restart at `purge_step`: TensorBoard then hides the events of
  // earlier files at steps >= purge_step, which a resumed run writes again
  // (PyTorch's SummaryWriter(purge_step=...) writes the same
  // Event{step, session_log: START}). Throws like add_scalar.
  void add_session_start(int64_t purge_step);
  // Pushes buffered records to the OS so a running TensorBoard sees them.
  void flush();

  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& payload);

  std::string path_;
  std::FILE* f_ = nullptr;
  std::mutex mu_;
};

}  // namespace vt
