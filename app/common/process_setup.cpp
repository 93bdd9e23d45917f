#include "common/process_setup.h"

#include <QByteArray>
#include <QHashSeed>
#include <QtGlobal>

#include <sys/stat.h>
#include <unistd.h>

namespace gwb::app {

void ensureRuntimeDir() {
    if (!qEnvironmentVariableIsEmpty("XDG_RUNTIME_DIR")) return;
    const QByteArray dir = "/tmp/runtime-" + QByteArray::number(static_cast<qulonglong>(::getuid()));
    ::mkdir(dir.constData(), 0700);
    struct stat st {};
    if (::stat(dir.constData(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::getuid() &&
        (st.st_mode & 0777) == 0700)
        qputenv("XDG_RUNTIME_DIR", dir);
}

void seedHashesWhenReproducible() {
    if (!qEnvironmentVariableIsEmpty("SOURCE_DATE_EPOCH")) QHashSeed::setDeterministicGlobalSeed();
}

} // namespace gwb::app
