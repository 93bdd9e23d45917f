#pragma once
// Raw colormap tables (see colormap_tables.cpp for their sources and licences).

namespace gwb::views::detail {
extern const float kMagma[256][3];              ///< sRGB in [0, 1]
extern const float kViridis[256][3];            ///< sRGB in [0, 1]
extern const float kCividis[256][3];            ///< sRGB in [0, 1]
extern const unsigned char kRdBuAnchors[11][3]; ///< sRGB 0..255, red (low) to blue (high)
} // namespace gwb::views::detail
