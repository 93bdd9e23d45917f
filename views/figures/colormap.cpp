#include "gwb/views/colormap.h"

#include "colormap_tables.h"

#include <algorithm>
#include <cmath>

namespace gwb::views {
namespace {

std::array<QRgb, 256> fromFloatTable(const float (&t)[256][3]) {
    std::array<QRgb, 256> out{};
    for (int i = 0; i < 256; ++i)
        out[static_cast<size_t>(i)] =
            qRgb(static_cast<int>(std::lround(t[i][0] * 255.0)), static_cast<int>(std::lround(t[i][1] * 255.0)),
                 static_cast<int>(std::lround(t[i][2] * 255.0)));
    return out;
}

// matplotlib's LinearSegmentedColormap with equally spaced anchors, sampled at 256 points.
std::array<QRgb, 256> fromAnchors(const unsigned char (&a)[11][3]) {
    std::array<QRgb, 256> out{};
    for (int i = 0; i < 256; ++i) {
        const double x = i / 255.0 * 10.0;
        const int k = std::min(9, static_cast<int>(x));
        const double f = x - k;
        int c[3];
        for (int ch = 0; ch < 3; ++ch)
            c[ch] = static_cast<int>(std::lround(a[k][ch] * (1 - f) + a[k + 1][ch] * f));
        out[static_cast<size_t>(i)] = qRgb(c[0], c[1], c[2]);
    }
    return out;
}

} // namespace

QString colormapName(ColormapId id) {
    switch (id) {
    case ColormapId::Viridis:
        return QStringLiteral("viridis");
    case ColormapId::Cividis:
        return QStringLiteral("cividis");
    case ColormapId::Magma:
        return QStringLiteral("magma");
    case ColormapId::RdBu:
        return QStringLiteral("RdBu");
    }
    return QStringLiteral("viridis");
}

ColormapId colormapFromName(const QString& name, ColormapId fallback) {
    for (ColormapId id : {ColormapId::Viridis, ColormapId::Cividis, ColormapId::Magma, ColormapId::RdBu})
        if (name.compare(colormapName(id), Qt::CaseInsensitive) == 0) return id;
    return fallback;
}

QStringList colormapNames() {
    return {QStringLiteral("viridis"), QStringLiteral("cividis"), QStringLiteral("magma"), QStringLiteral("RdBu")};
}

const std::array<QRgb, 256>& colormapTable(ColormapId id) {
    static const std::array<QRgb, 256> viridis = fromFloatTable(detail::kViridis);
    static const std::array<QRgb, 256> cividis = fromFloatTable(detail::kCividis);
    static const std::array<QRgb, 256> magma = fromFloatTable(detail::kMagma);
    static const std::array<QRgb, 256> rdbu = fromAnchors(detail::kRdBuAnchors);
    switch (id) {
    case ColormapId::Viridis:
        return viridis;
    case ColormapId::Cividis:
        return cividis;
    case ColormapId::Magma:
        return magma;
    case ColormapId::RdBu:
        return rdbu;
    }
    return viridis;
}

ColorScale ColorScale::fromRange(ColormapId map, double lo, double hi, bool diverging) {
    ColorScale s;
    s.map = map;
    s.diverging = diverging;
    if (!std::isfinite(lo) || !std::isfinite(hi)) {
        lo = 0;
        hi = 1;
    }
    if (lo > hi) std::swap(lo, hi);
    if (diverging) {
        const double m = std::max(std::abs(lo), std::abs(hi));
        lo = -m;
        hi = m;
    }
    if (hi - lo <= 0) {
        // A constant matrix still needs a usable scale: widen around the value.
        const double pad = std::max(1e-12, std::abs(hi) * 1e-6);
        lo -= pad;
        hi += pad;
    }
    s.low = lo;
    s.high = hi;
    return s;
}

double ColorScale::effectiveLow() const {
    return diverging ? -std::max(std::abs(low), std::abs(high)) : low;
}
double ColorScale::effectiveHigh() const {
    return diverging ? std::max(std::abs(low), std::abs(high)) : high;
}

double ColorScale::normalized(double v) const {
    if (std::isnan(v)) return std::nan("");
    const double lo = effectiveLow();
    const double hi = effectiveHigh();
    if (hi <= lo) return 0.5;
    return std::clamp((v - lo) / (hi - lo), 0.0, 1.0);
}

QRgb ColorScale::color(double v) const {
    const double t = normalized(v);
    if (std::isnan(t)) return kNanColor;
    // 256 equal bins, as matplotlib's ListedColormap does with N = 256.
    const int idx = std::min(255, static_cast<int>(t * 256.0));
    return colormapTable(map)[static_cast<size_t>(idx)];
}

} // namespace gwb::views
