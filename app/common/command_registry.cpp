#include "common/command_registry.h"

#include <algorithm>
#include <cstring>

namespace gwb::app {
namespace {
std::vector<Command>& registry() {
    static std::vector<Command> all; // function-local: safe from static-initialization order
    return all;
}
} // namespace

bool registerCommand(const Command& command) {
    registry().push_back(command);
    return true;
}

std::vector<Command> commands() {
    auto all = registry();
    std::sort(all.begin(), all.end(),
              [](const Command& a, const Command& b) { return std::strcmp(a.name, b.name) < 0; });
    return all;
}

const Command* findCommand(const QString& name) {
    for (const auto& c : registry())
        if (name == QLatin1String(c.name)) return &c;
    return nullptr;
}

} // namespace gwb::app
