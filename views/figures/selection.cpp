#include "gwb/views/selection.h"

#include "gwb/views/view_data.h"

#include <algorithm>

namespace gwb::views {
namespace {
int clampTo(int v, int n) {
    return n <= 0 ? 0 : std::clamp(v, 0, n - 1);
}
} // namespace

Selection::Selection(QObject* parent) : QObject(parent) {}

void Selection::setExtents(int tokens, int layers, int heads, int offsets) {
    m_tokens = std::max(0, tokens);
    m_layers = std::max(0, layers);
    m_heads = std::max(0, heads);
    m_offsets = std::max(0, offsets);
    Q_EMIT extentsChanged();
    setToken(m_token);
    setLayer(m_layer);
    setHead(m_head);
    setOffsetIndex(m_offsetIndex);
}

void Selection::setExtents(const WorkbenchData& data) {
    setExtents(static_cast<int>(data.tokenCount()), static_cast<int>(data.layerCount()),
               static_cast<int>(data.headCount()), static_cast<int>(data.offsetCount()));
}

void Selection::setState(const SelectionState& s) {
    setToken(s.token);
    setLayer(s.layer);
    setHead(s.head);
    setOffsetIndex(s.offsetIndex);
}

void Selection::setToken(int token) {
    token = clampTo(token, m_tokens);
    if (token == m_token) return;
    m_token = token;
    Q_EMIT tokenChanged(m_token);
}

void Selection::setLayer(int layer) {
    layer = clampTo(layer, m_layers);
    if (layer == m_layer) return;
    m_layer = layer;
    Q_EMIT layerChanged(m_layer);
}

void Selection::setHead(int head) {
    head = clampTo(head, m_heads);
    if (head == m_head) return;
    m_head = head;
    Q_EMIT headChanged(m_head);
}

void Selection::setOffsetIndex(int offsetIndex) {
    offsetIndex = clampTo(offsetIndex, m_offsets);
    if (offsetIndex == m_offsetIndex) return;
    m_offsetIndex = offsetIndex;
    Q_EMIT offsetIndexChanged(m_offsetIndex);
}

} // namespace gwb::views
