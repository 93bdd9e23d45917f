#pragma once
// Small random models for the app tests: a 2-layer Grassmann model and a 2-layer Transformer
// with a tiny WordPiece vocabulary, written once per test binary into a temporary folder.

#include <QString>

namespace gwb::app::test {

struct TestModels {
    QString folder;       ///< temporary folder holding the files
    QString grassmann;    ///< .gwb, context 24 tokens, offsets {1, 2} and {1, 3}
    QString transformer;  ///< .gwb, 2 heads, context 24 tokens
    QString grassmannPre; ///< as grassmann, pre-norm (h + mix(LN1 h), then h + FFN(LN2 h))
    QString notAModel;    ///< a text file with the .gwb suffix
};

/// Created on first use; removed at exit.
const TestModels& testModels();

/// A prompt of about n tokens for the test vocabulary.
QString promptOfTokens(int n);

} // namespace gwb::app::test
