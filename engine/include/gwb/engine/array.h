#pragma once
// Plain dense arrays that cross the engine boundary. No Torch, no Qt.

#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace gwb::engine {

/// A dense row-major array of T with an explicit shape. Empty shape + empty data = "absent".
template <typename T> struct Array {
    std::vector<int64_t> shape; ///< extents, outermost first
    std::vector<T> data;        ///< row-major values, size == product(shape)

    Array() = default;
    Array(std::vector<int64_t> s, std::vector<T> d) : shape(std::move(s)), data(std::move(d)) {
        if (static_cast<int64_t>(data.size()) != count(shape))
            throw std::invalid_argument("Array: data size does not match shape");
    }
    static Array zeros(std::vector<int64_t> s) {
        Array a;
        a.data.assign(static_cast<size_t>(count(s)), T{});
        a.shape = std::move(s);
        return a;
    }
    static int64_t count(const std::vector<int64_t>& s) {
        return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<int64_t>());
    }
    bool empty() const { return data.empty(); }
    int64_t dim(size_t i) const { return i < shape.size() ? shape[i] : 0; }
    int64_t rank() const { return static_cast<int64_t>(shape.size()); }
    /// Pointer to the start of row i of a 2-D (or the i-th outermost slice of an N-D) array.
    const T* row(int64_t i) const { return data.data() + i * (count(shape) / shape.at(0)); }
    T* row(int64_t i) { return data.data() + i * (count(shape) / shape.at(0)); }
    const T& at2(int64_t i, int64_t j) const { return data[static_cast<size_t>(i * shape[1] + j)]; }
    const T& at3(int64_t i, int64_t j, int64_t k) const {
        return data[static_cast<size_t>((i * shape[1] + j) * shape[2] + k)];
    }
};

/// "[2, 3]": a shape for error messages.
inline std::string shapeText(const std::vector<int64_t>& shape) {
    std::string out = "[";
    for (size_t i = 0; i < shape.size(); ++i)
        out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + "]";
}

using FloatArray = Array<float>;
using IntArray = Array<int32_t>;

} // namespace gwb::engine
