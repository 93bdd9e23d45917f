#pragma once
// Device errors at the engine's API boundary (engine-internal). LibTorch reports a failed
// allocation as c10::OutOfMemoryError and everything else as c10::Error, whose what() carries a
// C++ backtrace. Callers of the engine get a std::runtime_error that names the device, the work
// and, for out-of-memory, LibTorch's own account of how much was asked for.

#include <c10/util/Exception.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace gwb::engine {

/// Runs f(); a LibTorch error becomes std::runtime_error("<work> on <device>: ..."). Other
/// exceptions (Cancelled, std::invalid_argument, ...) pass through unchanged.
template <class F> auto withDeviceErrors(const std::string& work, const std::string& device, F&& f) -> decltype(f()) {
    try {
        return std::forward<F>(f)();
    } catch (const c10::OutOfMemoryError& e) {
        throw std::runtime_error("out of memory on " + device + " while " + work + " (" + e.what_without_backtrace() +
                                 "): try a shorter prompt, a smaller batch, or --device cpu");
    } catch (const c10::Error& e) {
        throw std::runtime_error(work + " on " + device + " failed: " + e.what_without_backtrace());
    }
}

} // namespace gwb::engine
