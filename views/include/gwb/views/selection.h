#pragma once
// The selection shared by every view: clicking a token anywhere selects it everywhere.

#include <QObject>

namespace gwb::engine {
struct WorkbenchData;
}

namespace gwb::views {

using gwb::engine::WorkbenchData;

/// A selection as plain values (figures without a window; clamped like Selection does).
struct SelectionState {
    int token = 0;
    int layer = 0;
    int head = 0;
    int offsetIndex = 0;
};

/// Current token, layer, head and offset index. Setters clamp to the extents; each field has its
/// own changed signal, emitted only when the value really changes.
class Selection : public QObject {
    Q_OBJECT
public:
    explicit Selection(QObject* parent = nullptr);

    int token() const { return m_token; }
    int layer() const { return m_layer; }
    int head() const { return m_head; }
    int offsetIndex() const { return m_offsetIndex; } ///< index into the selected layer's offset set

    int tokenCount() const { return m_tokens; }
    int layerCount() const { return m_layers; }
    int headCount() const { return m_heads; }
    int offsetCount() const { return m_offsets; }

    /// Sets the extents and re-clamps the current values (emitting changes).
    void setExtents(int tokens, int layers, int heads, int offsets);
    /// Extents from the data (tokens of the primary trace, layers, heads, max offsets).
    void setExtents(const WorkbenchData& data);
    /// The current values.
    SelectionState state() const { return {m_token, m_layer, m_head, m_offsetIndex}; }
    /// Sets the four values (each clamped).
    void setState(const SelectionState& s);

public Q_SLOTS:
    void setToken(int token);
    void setLayer(int layer);
    void setHead(int head);
    void setOffsetIndex(int offsetIndex);

Q_SIGNALS:
    void tokenChanged(int token);
    void layerChanged(int layer);
    void headChanged(int head);
    void offsetIndexChanged(int offsetIndex);
    void extentsChanged();

private:
    int m_token = 0;
    int m_layer = 0;
    int m_head = 0;
    int m_offsetIndex = 0;
    int m_tokens = 0;
    int m_layers = 0;
    int m_heads = 0;
    int m_offsets = 0;
};

} // namespace gwb::views
