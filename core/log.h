// The process-wide logger "vt" (spdlog): coloured lines on stderr, and
// optionally a copy in a file (runs/<name>/log.txt). Pattern:
// "[2025-01-31 12:00:00.123] [info] message". Every line is flushed as it is
// logged, so log.txt is complete up to the last line even after SIGKILL.
#pragma once
#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace vt {

spdlog::logger& log();
// Adds a file sink (appending); throws spdlog::spdlog_ex naming the path when
// it cannot be opened. Calling it again replaces the previous file.
void log_to_file(const std::string& path);
// Writes one line at `level` to the file sink only (no-op without one) and
// flushes it: for a message the caller also prints on stderr itself, such
// as a fatal error that main() reports, so the terminal shows it once.
void log_file_only(spdlog::level::level_enum level, const std::string& msg);
// Detaches (and closes) the file sink, if any.
void log_close_file();
// "trace", "debug", "info", "warn", "error", "off"; throws
// std::invalid_argument for anything else.
void set_log_level(const std::string& level);

}  // namespace vt
