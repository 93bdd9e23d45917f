#pragma once
// Helpers of the Corpus figure (corpus_figure.cpp: its settings, controls' choices, tables and
// caption; corpus_figure_charts.cpp: its charts): model roles and names, and the group axes of a
// statistics quantity (leading axis: layer, transition or lens layer; trailing: head, offset, ...).

#include "gwb/engine/corpus_stats.h"

#include <QColor>
#include <QString>

#include <string>
#include <vector>

namespace gwb::views::corpus {

/// "model" or "baseline": the roles a statistics file gives its two models.
bool isRole(const std::string& r);
/// "Grassmann" / "Transformer" from the quantities only one kind of model has; else the role.
QString roleLabel(const gwb::engine::CorpusStats& s, const QString& role);
/// The series colour of a model label (the same in every chart).
QColor roleColor(const QString& label);
/// Groups per leading index: the product of the trailing axes' extents.
int64_t trailingGroups(const gwb::engine::StatQuantity& q);
/// Extent of the leading axis (1 without axes).
int64_t leadingExtent(const gwb::engine::StatQuantity& q);
/// "L0", "L1→2" (transitions); lens layers "L0 in" ... and "final" (as the Logit lens view).
QString categoryLabel(const gwb::engine::StatQuantity& q, int64_t i, int64_t extent);
/// "head 2", "offset 1, angle 0": the trailing axes' indices of a flat index r.
QString trailingLabel(const gwb::engine::StatQuantity& q, int64_t r);
/// Flat group indices of leading index `leading`: one (`group` >= 0) or all of its trailing groups.
std::vector<int64_t> groupsOf(const gwb::engine::StatQuantity& q, int64_t leading, int group);
/// The file name of a path.
QString shortFile(const std::string& path);

} // namespace gwb::views::corpus
