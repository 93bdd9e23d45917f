#pragma once
// Tests of the causal views and runs compare the engine's plain results (std::string, UTF-8) with
// what Qt shows (QString): conversions both ways and an equality gtest's EXPECT_EQ finds.

#include <QString>
#include <QStringList>

#include <string>
#include <vector>

/// The engine's labels as a QStringList.
inline QStringList stdToQ(const std::vector<std::string>& v) {
    QStringList out;
    for (const std::string& s : v)
        out << QString::fromStdString(s);
    return out;
}

/// A QStringList as the engine's labels.
inline std::vector<std::string> stdList(const QStringList& v) {
    std::vector<std::string> out;
    for (const QString& s : v)
        out.push_back(s.toStdString());
    return out;
}

/// QString against the engine's UTF-8 text (C++20 also rewrites std::string == QString and !=).
inline bool operator==(const QString& a, const std::string& b) {
    return a == QString::fromStdString(b);
}

/// A QStringList against the engine's labels.
inline bool operator==(const QStringList& a, const std::vector<std::string>& b) {
    return a == stdToQ(b);
}
