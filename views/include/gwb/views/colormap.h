#pragma once
// Colormaps and the value -> colour mapping shared by every heatmap, strip and figure.

#include <QColor>
#include <QString>
#include <QStringList>
#include <array>

namespace gwb::views {

/// Sequential perceptually uniform maps for non-negative data, RdBu (diverging) for signed data.
enum class ColormapId { Viridis, Cividis, Magma, RdBu };

QString colormapName(ColormapId id); ///< "viridis", "cividis", "magma", "RdBu"
/// Parses a name (case-insensitive); unknown names give `fallback`.
ColormapId colormapFromName(const QString& name, ColormapId fallback = ColormapId::Viridis);
QStringList colormapNames();
/// The map's 256-entry table (index 0 = low end). RdBu is ColorBrewer's 11 anchors interpolated.
const std::array<QRgb, 256>& colormapTable(ColormapId id);

/// Neutral grey used for NaN ("not defined here") cells in every map.
inline constexpr QRgb kNanColor = 0xff9a9a9a;

/// Maps values to colours: linear from `low` to `high`; for a diverging scale the range is forced
/// symmetric around 0 (|low| = |high| = max of both) so that 0 is the map's centre.
struct ColorScale {
    ColormapId map = ColormapId::Viridis;
    double low = 0;
    double high = 1;
    bool diverging = false;

    /// Scale covering [lo, hi] (diverging: [-m, m] with m = max(|lo|, |hi|)); degenerate ranges widened.
    static ColorScale fromRange(ColormapId map, double lo, double hi, bool diverging);
    double effectiveLow() const;
    double effectiveHigh() const;
    /// Position in [0, 1] along the map (clamped); NaN for NaN input.
    double normalized(double v) const;
    QRgb color(double v) const;
};

} // namespace gwb::views
