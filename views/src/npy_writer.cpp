#include "npy_writer.h"

#include <QtEndian>
#include <cstring>

namespace gwb::views::detail {

QByteArray encodeNpy(const gwb::engine::FloatArray& array) {
    QByteArray shape = "(";
    for (size_t i = 0; i < array.shape.size(); ++i) {
        shape += QByteArray::number(static_cast<qlonglong>(array.shape[i]));
        if (array.shape.size() == 1 || i + 1 < array.shape.size()) shape += ",";
        if (i + 1 < array.shape.size()) shape += " ";
    }
    shape += ")";
    QByteArray header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    // Magic (6) + version (2) + length (2) + header, padded with spaces to a multiple of 64, '\n'-terminated.
    const int total = 10 + header.size() + 1;
    header += QByteArray((64 - total % 64) % 64, ' ');
    header += '\n';
    QByteArray out;
    out.reserve(10 + header.size() + static_cast<int>(array.data.size() * 4));
    out += QByteArray("\x93NUMPY", 6);
    out += char(1);
    out += char(0);
    const quint16 len = qToLittleEndian(static_cast<quint16>(header.size()));
    out += QByteArray(reinterpret_cast<const char*>(&len), 2);
    out += header;
    for (float v : array.data) {
        quint32 bits;
        std::memcpy(&bits, &v, 4);
        bits = qToLittleEndian(bits);
        out += QByteArray(reinterpret_cast<const char*>(&bits), 4);
    }
    return out;
}

} // namespace gwb::views::detail
