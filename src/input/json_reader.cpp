#include "input/json_reader.h"

#include "core/whole_number.h"

namespace gpuclean::input {

// `json` is JsonReader's own alias: in the parameters, after `JsonReader::`; the return types
// before it name it through the class (a namespace-wide alias clashed with another file's
// `using nlohmann::json` in a unity batch: clang's -Wshadow, the sanitizer build of 1f963dd).
const JsonReader::json* JsonReader::object(const json& parent, const char* key,
                                           const std::string& path) {
  return typed(parent, key, path, json::value_t::object, "an object");
}

const JsonReader::json* JsonReader::array(const json& parent, const char* key,
                                          const std::string& path) {
  return typed(parent, key, path, json::value_t::array, "an array");
}

std::optional<std::string> JsonReader::string(const json& parent, const char* key,
                                              const std::string& path) {
  const json* v = member(parent, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) {
    mistyped(path, key, "a string", *v);
    return std::nullopt;
  }
  return v->get<std::string>();
}

std::optional<bool> JsonReader::boolean(const json& parent, const char* key,
                                        const std::string& path) {
  const json* v = member(parent, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) {
    mistyped(path, key, "true or false", *v);
    return std::nullopt;
  }
  return v->get<bool>();
}

std::optional<int> JsonReader::integer(const json& parent, const char* key,
                                       const std::string& path) {
  const json* v = member(parent, key);
  if (v == nullptr) return std::nullopt;
  // Unsigned and signed apart: 2^64-1 read through get<int64_t> would be -1.
  bool fits = false;
  if (v->is_number_unsigned()) {
    fits = v->get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<int>::max());
  } else if (v->is_number_integer()) {
    const auto value = v->get<std::int64_t>();
    fits = value >= std::numeric_limits<int>::min() && value <= std::numeric_limits<int>::max();
  }
  if (!fits) {
    mistyped(path, key, "an integer", *v);
    return std::nullopt;
  }
  return static_cast<int>(v->get<std::int64_t>());
}

std::optional<double> JsonReader::number(const json& parent, const char* key,
                                         const std::string& path) {
  const json* v = member(parent, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) {
    mistyped(path, key, "a number", *v);
    return std::nullopt;
  }
  return v->get<double>();
}

std::optional<std::vector<std::string>> JsonReader::strings(const json& parent, const char* key,
                                                            const std::string& path) {
  const json* v = array(parent, key, path);
  if (v == nullptr) return std::nullopt;
  std::vector<std::string> out;
  for (const json& item : *v) {
    if (!item.is_string()) {
      mistyped(path, key, "an array of strings", item);
      return std::nullopt;
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::map<unsigned, std::uint64_t> JsonReader::gpu_memory(const json& parent,
                                                         const std::string& path) {
  std::map<unsigned, std::uint64_t> out;
  const json* memory = object(parent, "gpu_memory", path);
  if (memory == nullptr) return out;
  for (const auto& [key, value] : memory->items()) {
    const auto index = whole_number<unsigned>(key);
    const auto bytes = non_negative(value);
    if (!index || !bytes) {
      report(join(path, "gpu_memory"), "expected {\"GPU index\": bytes}");
      break;
    }
    out[*index] = *bytes;
  }
  return out;
}

void JsonReader::report(const std::string& where, const std::string& what) {
  if (error_.empty()) error_ = where + ": " + what;
}

std::optional<std::uint64_t> JsonReader::non_negative(const json& value) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  if (value.is_number_integer() && value.get<std::int64_t>() >= 0) {
    return static_cast<std::uint64_t>(value.get<std::int64_t>());
  }
  return std::nullopt;
}

std::string JsonReader::join(const std::string& path, const char* key) {
  return path.empty() ? std::string(key) : path + "." + key;
}

const JsonReader::json* JsonReader::member(const json& parent, const char* key) {
  if (!parent.is_object()) return nullptr;
  auto it = parent.find(key);
  if (it == parent.end() || it->is_null()) return nullptr;
  return &*it;
}

void JsonReader::mistyped(const std::string& path, const char* key, const char* expected,
                          const json& found) {
  report(join(path, key), std::string("expected ") + expected + ", found " + found.type_name());
}

const JsonReader::json* JsonReader::typed(const json& parent, const char* key,
                                          const std::string& path, json::value_t type,
                                          const char* expected) {
  const json* v = member(parent, key);
  if (v == nullptr) return nullptr;
  if (v->type() != type) {
    mistyped(path, key, expected, *v);
    return nullptr;
  }
  return v;
}

}  // namespace gpuclean::input
