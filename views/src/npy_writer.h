#pragma once
// NPY (format version 1.0) encoding of float32 arrays, readable by numpy.load.

#include "gwb/engine/array.h"

#include <QByteArray>

namespace gwb::views::detail {

/// The complete .npy file content for a C-order float32 array ('<f4').
QByteArray encodeNpy(const gwb::engine::FloatArray& array);

} // namespace gwb::views::detail
