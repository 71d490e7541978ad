// One "kernel" per translation unit; KERNEL_ID makes each unit distinct. The standard
// library templates used here (regex, map, variant, sort) are deliberately heavy to compile,
// so that a cold build takes long enough for the compiler cache to matter.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <regex>
#include <string>
#include <variant>
#include <vector>

#define FASTEXT_CAT2(a, b) a##b
#define FASTEXT_CAT(a, b) FASTEXT_CAT2(a, b)
#define FASTEXT_KERNEL FASTEXT_CAT(fastext_kernel_, KERNEL_ID)

namespace {

template <int N>
struct Mix {
  static constexpr std::uint64_t value =
      (Mix<N - 1>::value * 6364136223846793005ULL + 1442695040888963407ULL) ^ N;
};
template <>
struct Mix<0> {
  static constexpr std::uint64_t value = 0x9E3779B97F4A7C15ULL + KERNEL_ID;
};

using Cell = std::variant<std::int64_t, double, std::string>;

std::uint64_t fold(const std::map<std::string, std::vector<Cell>>& table) {
  std::uint64_t acc = Mix<200 + KERNEL_ID>::value;
  for (const auto& [key, cells] : table) {
    for (const auto& cell : cells) {
      acc ^= std::visit(
          [](const auto& v) -> std::uint64_t {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::string>) return v.size();
            else return static_cast<std::uint64_t>(v);
          },
          cell);
      acc = acc * 1099511628211ULL + key.size();
    }
  }
  return acc;
}

}  // namespace

extern "C" std::uint64_t FASTEXT_KERNEL(const unsigned char* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  static const std::regex word(R"(([A-Za-z]+)|([0-9]+))", std::regex::optimize);
  std::map<std::string, std::vector<Cell>> table;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), word);
       it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    if (m[1].matched) table[m[1].str()].push_back(Cell{m[1].str()});
    else table["#"].push_back(Cell{static_cast<std::int64_t>(std::stoll(m[2].str()))});
  }
  std::vector<unsigned char> bytes(data, data + size);
  std::sort(bytes.begin(), bytes.end());
  std::uint64_t acc = fold(table);
  for (unsigned char b : bytes) acc = (acc ^ b) * 1099511628211ULL;
  return acc;
}
