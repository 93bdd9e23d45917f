#pragma once
// What the user tells the GUI when a PyTorch checkpoint (.pt/.pth/.safetensors) cannot be opened
// on its own: which implementation wrote it (layout), where its vocabulary is, and optionally its
// offset schedule. The choice travels with the path into the ModelCache, so the worker that loads
// the model uses it. Qt Core only.

#include "gwb/engine/import.h"

#include <QString>
#include <QStringList>

namespace gwb::app {

struct ImportChoice {
    QString layout = QStringLiteral("auto"); ///< layoutName(): auto, grasslm, alphaxiv, kanenorman
    QString vocabPath;                       ///< vocab.txt (WordPiece) or vocab.json (GPT-2 BPE); "" = none
    QString offsets;                         ///< parseOffsetSchedule() text; "" = the layout's schedule
    bool operator==(const ImportChoice&) const = default;
};

/// The layout names offered to the user, "auto" first.
QStringList importLayoutNames();

/// The message ModelCache throws for an imported checkpoint without a tokenizer (the GUI traces
/// text, so it needs one).
QString noVocabularyMessage(const QString& path);

/// True when `message` (from loading `path`) is a problem the user can fix by choosing a layout
/// or a vocabulary: the layout could not be detected, no vocabulary was found, or the chosen
/// vocabulary/layout/offsets did not fit. False for .gwb files and for unrelated errors.
bool needsImportChoice(const QString& path, const QString& message);

/// The engine's options for `choice` on `device`. Throws std::invalid_argument naming a bad
/// layout name or offset schedule text.
gwb::engine::ImportOptions importOptionsFor(const ImportChoice& choice, const QString& device);

} // namespace gwb::app
