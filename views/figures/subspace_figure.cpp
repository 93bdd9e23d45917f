#include "gwb/views/subspace_figure.h"

#include "figure_common.h"

#include "gwb/views/chart_data.h"

#include <Eigen/Dense>
#include <QPainter>
#include <cmath>
#include <stdexcept>

namespace gwb::views {

SubspacePicture computeSubspacePicture(const gwb::engine::GrassmannLayerTrace& layer, int64_t t,
                                       const QStringList& tokens) {
    const auto& z = layer.z;
    if (z.rank() != 2 || z.dim(1) < 3 || z.dim(0) < 2)
        throw std::invalid_argument("subspace picture: z must be T x r with T >= 2 and r >= 3");
    const int64_t T = z.dim(0), r = z.dim(1);
    if (t < 0 || t >= T) throw std::invalid_argument("subspace picture: token " + std::to_string(t) + " out of range");
    Eigen::MatrixXd Z(T, r);
    for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < r; ++j)
            Z(i, j) = z.at2(i, j);
    // Principal directions of the layer's z over the prompt (centred), by SVD.
    const Eigen::MatrixXd C = Z.rowwise() - Z.colwise().mean();
    Eigen::JacobiSVD<Eigen::MatrixXd> svd(C, Eigen::ComputeThinV);
    const Eigen::MatrixXd V = svd.matrixV().leftCols(3); // r x 3
    const Eigen::VectorXd s = svd.singularValues();
    SubspacePicture pic;
    pic.explainedVariance =
        s.squaredNorm() > 0 ? s.head(std::min<Eigen::Index>(3, s.size())).squaredNorm() / s.squaredNorm() : 0;
    pic.directions = gwb::engine::FloatArray::zeros({3, r});
    for (int k = 0; k < 3; ++k)
        for (int64_t j = 0; j < r; ++j)
            pic.directions.data[static_cast<size_t>(k * r + j)] = static_cast<float>(V(j, k));
    std::vector<float> bases;
    const QString tokText = t < tokens.size() ? tokens[static_cast<int>(t)] : QString();
    for (size_t o = 0; o < layer.offsets.size(); ++o) {
        const int D = layer.offsets[o];
        if (t - D < 0) continue;
        const Eigen::VectorXd zt = Z.row(t).transpose();
        const Eigen::VectorXd zp = Z.row(t - D).transpose();
        Eigen::MatrixXd Q(r, 2);
        Q.col(0) = zt;
        Q.col(1) = zp;
        Eigen::HouseholderQR<Eigen::MatrixXd> qr(Q);
        const Eigen::MatrixXd Qo = qr.householderQ() * Eigen::MatrixXd::Identity(r, 2);
        const double kept = (V.transpose() * Qo).squaredNorm() / 2.0;
        const Eigen::Vector3d u = V.transpose() * zt;
        const Eigen::Vector3d v = V.transpose() * zp;
        const QString label =
            QStringLiteral("D=%1 (t\u2212D = %2 '%3')")
                .arg(D)
                .arg(t - D)
                .arg(t - D < tokens.size() ? detail::labelTextForTitle(tokens[static_cast<int>(t - D)].toStdString())
                                           : QString());
        const Eigen::Vector3d n = u.cross(v);
        if (u.norm() < 1e-12 || v.norm() < 1e-12 || n.norm() < 1e-9 * u.norm() * v.norm()) {
            pic.sphere.notes << QStringLiteral("D=%1: plane collapses to a line under the projection").arg(D);
            continue;
        }
        const Eigen::Vector3d e1 = u.normalized();
        const Eigen::Vector3d e2 = n.cross(e1).normalized();
        SphereData::Circle c;
        c.label = label + QStringLiteral(", kept %1%").arg(std::lround(kept * 100));
        c.color = seriesColor(static_cast<int>(o));
        c.e1 = {e1[0], e1[1], e1[2]};
        c.e2 = {e2[0], e2[1], e2[2]};
        pic.sphere.circles.push_back(c);
        const Eigen::Vector3d vp = v.normalized();
        pic.sphere.points.push_back({QString(), c.color, {vp[0], vp[1], vp[2]}});
        pic.offsets.push_back(D);
        pic.keptFraction.push_back(kept);
        for (const auto& e : {e1, e2})
            for (int k = 0; k < 3; ++k)
                bases.push_back(static_cast<float>(e[k]));
    }
    const Eigen::Vector3d u = V.transpose() * Z.row(t).transpose();
    if (u.norm() > 1e-12) {
        const Eigen::Vector3d un = u.normalized();
        pic.sphere.points.push_back({QStringLiteral("z_t"), Qt::black, {un[0], un[1], un[2]}});
    }
    if (pic.offsets.empty())
        pic.sphere.notes << QStringLiteral("token %1 has no valid offset (t \u2212 D < 0 for every D)").arg(t);
    pic.sphere.notes
        << QStringLiteral("3 directions hold %1% of the z variance").arg(std::lround(pic.explainedVariance * 100));
    pic.planeBases = gwb::engine::FloatArray({static_cast<int64_t>(pic.offsets.size()), 2, 3}, bases);
    (void)tokText;
    return pic;
}

QJsonObject SubspaceFigure::settings() const {
    QJsonObject o = Figure::settings();
    o.insert(QStringLiteral("yaw"), m_rotation.yaw);
    o.insert(QStringLiteral("pitch"), m_rotation.pitch);
    return o;
}

void SubspaceFigure::setSettings(const QJsonObject& s) {
    Figure::setSettings(s);
    SphereRotation r = m_rotation;
    r.yaw = s.value(QStringLiteral("yaw")).toDouble(r.yaw);
    r.pitch = s.value(QStringLiteral("pitch")).toDouble(r.pitch);
    setRotation(r);
}

QString SubspaceFigure::missingDataMessage() const {
    return detail::noModelMessage(QStringLiteral("Grassmann"));
}

bool SubspaceFigure::hasContent() const {
    return detail::grassmannLayer(m_data, selLayer()) != nullptr;
}

const SubspacePicture& SubspaceFigure::picture() const {
    const QString key = QStringLiteral("%1/%2").arg(selLayer()).arg(selToken());
    if (key == m_pictureKey) return m_picture;
    m_pictureKey = key;
    m_error.clear();
    m_picture = SubspacePicture{};
    const auto* gl = detail::grassmannLayer(m_data, selLayer());
    if (!gl) return m_picture;
    if (gl->z.rank() == 2 && gl->z.dim(0) < 2) {
        // Said in the user's words (the computation's own message names its matrix shapes).
        m_error = QStringLiteral("The subspace picture needs at least 2 tokens (it projects the layer's reduced "
                                 "vectors onto their top-3 principal directions); this prompt has %1. Type a longer "
                                 "prompt and Run.")
                      .arg(gl->z.dim(0));
        return m_picture;
    }
    try {
        m_picture = computeSubspacePicture(*gl, selToken(), tokenLabels(*m_data.grassmann));
    } catch (const std::exception& e) {
        m_picture = SubspacePicture{};
        m_error = QString::fromUtf8(e.what());
        return m_picture;
    }
    const int t = selToken();
    m_picture.sphere.title = QStringLiteral("Pair planes of token %1 '%2', layer %3")
                                 .arg(t)
                                 .arg(detail::labelTextForTitle(m_data.grassmann->tokens[static_cast<size_t>(t)].text))
                                 .arg(selLayer());
    return m_picture;
}

QString SubspaceFigure::error() const {
    (void)picture();
    return m_error;
}

std::vector<DataTable> SubspaceFigure::dataTables() const {
    if (!hasContent() || !error().isEmpty()) return {};
    const SubspacePicture& pic = picture();
    std::vector<DataTable> out;
    DataTable dirs;
    dirs.name = QStringLiteral("directions_layer%1").arg(selLayer());
    dirs.quantity = QStringLiteral("top-3 principal directions of the layer's z over the prompt (rows)");
    dirs.values = pic.directions;
    dirs.rowAxis = QStringLiteral("direction");
    dirs.colAxis = QStringLiteral("reduced coordinate");
    dirs.rowLabels = {QStringLiteral("PC1"), QStringLiteral("PC2"), QStringLiteral("PC3")};
    out.push_back(dirs);
    DataTable planes;
    planes.name = QStringLiteral("planes_token%1_layer%2").arg(selToken()).arg(selLayer());
    planes.quantity = QStringLiteral("orthonormal bases (2 x 3) of the projected pair planes, one per valid offset");
    planes.values = pic.planeBases;
    planes.rowAxis = QStringLiteral("offset");
    for (int D : pic.offsets)
        planes.rowLabels << QStringLiteral("D=%1").arg(D);
    out.push_back(planes);
    DataTable kept;
    kept.name = QStringLiteral("kept_fraction_token%1_layer%2").arg(selToken()).arg(selLayer());
    kept.quantity =
        QStringLiteral("mean cos^2 of the principal angles between each pair plane and the 3-D projection space");
    std::vector<float> k;
    for (double v : pic.keptFraction)
        k.push_back(static_cast<float>(v));
    kept.values = gwb::engine::FloatArray({static_cast<int64_t>(k.size())}, k);
    kept.rowAxis = QStringLiteral("offset");
    kept.rowLabels = planes.rowLabels;
    out.push_back(kept);
    return out;
}

QString SubspaceFigure::caption() const {
    return QStringLiteral("Pair planes span(z_t, z_{t\u2212D}) in R^r of Grassmann layer %1 for token t = %2, one "
                          "great circle per valid offset D, "
                          "after orthogonal projection onto the top-3 principal directions of the layer's centred z "
                          "vectors over the prompt "
                          "(%3% of their variance); 'kept' = mean cos\u00b2 of the angles between a plane and that 3-D "
                          "space; dashed = far side.")
               .arg(selLayer())
               .arg(selToken())
               .arg(std::lround(picture().explainedVariance * 100)) +
           detail::modelPhrase(m_data.grassmann);
}

void SubspaceFigure::draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId) const {
    if (const QString error = this->error(); !error.isEmpty()) {
        p.drawText(rect, Qt::AlignCenter | Qt::TextWordWrap, error);
        return;
    }
    paintSphere(p, rect, picture().sphere, m_rotation, style);
}

} // namespace gwb::views
