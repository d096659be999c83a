// Reading gpuclean's own JSON documents back: a snapshot (`diff`, `check --against`), a run
// record (`plot`), kill's dry-run plan (`top`). One reader for all of them, so a field of the
// wrong type is refused the same way everywhere: the first one found is kept, with its path
// ("gpus[0].clocks.sm.current: expected a non-negative integer, found string"), and the
// document is refused as a whole. A field that is missing or null is unknown (nullopt), never
// an error: older documents lack newer fields.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpuclean::input {

class JsonReader {
 public:
  using json = nlohmann::json;

  [[nodiscard]] bool failed() const { return !error_.empty(); }
  [[nodiscard]] const std::string& error() const { return error_; }

  // The member as an object or an array, or nullptr when missing/null (or of the wrong type:
  // an error).
  const json* object(const json& parent, const char* key, const std::string& path);
  const json* array(const json& parent, const char* key, const std::string& path);

  std::optional<std::string> string(const json& parent, const char* key, const std::string& path);
  std::optional<bool> boolean(const json& parent, const char* key, const std::string& path);
  std::optional<int> integer(const json& parent, const char* key, const std::string& path);
  std::optional<double> number(const json& parent, const char* key, const std::string& path);
  // An array of strings.
  std::optional<std::vector<std::string>> strings(const json& parent, const char* key,
                                                  const std::string& path);

  // A non-negative integer no larger than T's maximum.
  template <typename T>
  std::optional<T> count(const json& parent, const char* key, const std::string& path) {
    const json* v = member(parent, key);
    if (v == nullptr) return std::nullopt;
    const auto value = non_negative(*v);
    if (!value || *value > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) {
      mistyped(path, key, "a non-negative integer", *v);
      return std::nullopt;
    }
    return static_cast<T>(*value);
  }

  // {"GPU index": bytes}, the member "gpu_memory" of holders and kill targets (missing or null:
  // empty).
  std::map<unsigned, std::uint64_t> gpu_memory(const json& parent, const std::string& path);

  // Calls fn(item, "KEY[i]") for each item of the array `key` (missing or null: none); the
  // items' paths start at KEY, as the top-level arrays' do.
  template <typename Fn>
  void each(const json& parent, const char* key, const std::string& path, Fn fn) {
    const json* items = array(parent, key, path);
    for (std::size_t i = 0; items != nullptr && i < items->size(); ++i) {
      fn((*items)[i], std::string(key) + "[" + std::to_string(i) + "]");
    }
  }

  // Calls fn(item, "NAME[i]", i) for each item of `items` until the first problem: an item that
  // is not an object, an earlier field's, or one of fn's own (it returns false).
  template <typename Fn>
  void each_object(const json& items, const std::string& name, Fn fn) {
    for (std::size_t i = 0; i < items.size() && !failed(); ++i) {
      const std::string path = name + "[" + std::to_string(i) + "]";
      if (!items[i].is_object()) {
        report(path, std::string("expected an object, found ") + items[i].type_name());
        break;
      }
      if (!fn(items[i], path, i)) break;
    }
  }

  // A state written with to_string: `parse` (one of the *_from_string functions, returning an
  // optional) must know it.
  template <typename Parse>
  auto choice(const json& parent, const char* key, const std::string& path, Parse parse)
      -> decltype(parse(std::string())) {
    const std::optional<std::string> text = string(parent, key, path);
    if (!text) return std::nullopt;
    auto value = parse(*text);
    if (!value) report(join(path, key), "\"" + *text + "\" is not one gpuclean writes");
    return value;
  }

  // A document's own rule broken (two GPUs with one UUID, a sample of the wrong length): kept
  // like a mistyped field, when it is the first problem.
  void report(const std::string& where, const std::string& what);

  // A parsed document holds non-negative integers as unsigned, one built in memory as whatever
  // type they were set from: both are accepted.
  static std::optional<std::uint64_t> non_negative(const json& value);
  static std::string join(const std::string& path, const char* key);

 private:
  static const json* member(const json& parent, const char* key);
  void mistyped(const std::string& path, const char* key, const char* expected, const json& found);
  const json* typed(const json& parent, const char* key, const std::string& path,
                    json::value_t type, const char* expected);

  std::string error_;
};

// Sets `out` when the field was there: for a model whose members have defaults of their own.
template <typename T>
void set_if_present(T& out, std::optional<T> value) {
  if (value) out = std::move(*value);
}
template <typename T>
void set_if_present(std::optional<T>& out, std::optional<T> value) {
  if (value) out = std::move(value);
}

}  // namespace gpuclean::input
