// libFuzzer harness: workbench session files (File > Open Session; app/gui/session.cpp
// Session::parse, on Qt Core's JSON). An accepted session must write JSON that reads back equal.
// Seeds: tests/fuzz/corpus/session.

#include "fuzz_util.h"

#include "gui/session.h"

#include <QByteArray>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace gwb;
    const QByteArray bytes(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
    app::Session s;
    if (!fuzz::readOrRefuse([&] { s = app::Session::parse(bytes, QStringLiteral("fuzz.gwbsession")); })) return 0;
    fuzz::mustWork("an accepted session", [&] {
        if (!(app::Session::fromJson(s.toJson()) == s)) fuzz::finding("session JSON round trip differs");
    });
    return 0;
}
