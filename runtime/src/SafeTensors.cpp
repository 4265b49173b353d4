//===- SafeTensors.cpp - Read-only safetensors archives -------------------===//
//
// Part of the Flow project.
//
// The header is parsed by a small JSON reader that accepts exactly what the
// format needs (objects, arrays, strings, integers; nesting at most 4 deep)
// and rejects everything else with the byte offset of the problem.
//
//===----------------------------------------------------------------------===//

#include "flow/runtime/SafeTensors.h"
#include "flow/runtime/Executable.h"
#include "flow/runtime/FileWriter.h"

#include <cstdio>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace flow::runtime;

namespace {

/// The largest header the format allows (100 MB).
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

/// A JSON value of the subset safetensors headers use.
struct Json {
  enum Kind { String, Integer, Array, Object } kind = String;
  std::string string;
  int64_t integer = 0;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;
};

class JsonReader {
public:
  JsonReader(const char *text, size_t size) : p(text), begin(text), end(text + size) {}

  Status read(Json &out) {
    if (Status s = value(out, 0); !s)
      return s;
    skipSpace();
    if (p != end)
      return error("trailing characters after the header object");
    return Status::ok();
  }

private:
  Status error(const std::string &what) const {
    return Status::error("malformed safetensors header at byte " +
                         std::to_string(p - begin) + ": " + what);
  }
  void skipSpace() {
    while (p != end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
      ++p;
  }
  Status value(Json &out, int depth) {
    if (depth > 4)
      return error("nesting deeper than the format uses");
    skipSpace();
    if (p == end)
      return error("unexpected end");
    if (*p == '"') {
      out.kind = Json::String;
      return string(out.string);
    }
    if (*p == '-' || (*p >= '0' && *p <= '9')) {
      out.kind = Json::Integer;
      return integer(out.integer);
    }
    if (*p == '[') {
      out.kind = Json::Array;
      ++p;
      skipSpace();
      if (p != end && *p == ']') {
        ++p;
        return Status::ok();
      }
      while (true) {
        out.items.emplace_back();
        if (Status s = value(out.items.back(), depth + 1); !s)
          return s;
        skipSpace();
        if (p != end && *p == ',') {
          ++p;
          continue;
        }
        if (p != end && *p == ']') {
          ++p;
          return Status::ok();
        }
        return error("expected ',' or ']' in an array");
      }
    }
    if (*p == '{') {
      out.kind = Json::Object;
      ++p;
      skipSpace();
      if (p != end && *p == '}') {
        ++p;
        return Status::ok();
      }
      while (true) {
        skipSpace();
        if (p == end || *p != '"')
          return error("expected a string key");
        std::string key;
        if (Status s = string(key); !s)
          return s;
        skipSpace();
        if (p == end || *p != ':')
          return error("expected ':' after a key");
        ++p;
        out.members.emplace_back(std::move(key), Json());
        if (Status s = value(out.members.back().second, depth + 1); !s)
          return s;
        skipSpace();
        if (p != end && *p == ',') {
          ++p;
          continue;
        }
        if (p != end && *p == '}') {
          ++p;
          return Status::ok();
        }
        return error("expected ',' or '}' in an object");
      }
    }
    return error("unsupported JSON value");
  }
  Status integer(int64_t &out) {
    bool negative = *p == '-';
    if (negative)
      ++p;
    if (p == end || *p < '0' || *p > '9')
      return error("expected a digit");
    // Magnitudes up to 2^62 (far beyond any real size); checked before
    // each step so that nothing wraps.
    constexpr uint64_t kMax = uint64_t(1) << 62;
    uint64_t v = 0;
    while (p != end && *p >= '0' && *p <= '9') {
      uint64_t digit = uint64_t(*p - '0');
      if (v > (kMax - digit) / 10)
        return error("integer out of range");
      v = v * 10 + digit;
      ++p;
    }
    if (p != end && (*p == '.' || *p == 'e' || *p == 'E'))
      return error("expected an integer");
    out = negative ? -int64_t(v) : int64_t(v);
    return Status::ok();
  }
  Status string(std::string &out) {
    ++p; // opening quote
    while (p != end && *p != '"') {
      char c = *p++;
      if (static_cast<unsigned char>(c) < 0x20)
        return error("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (p == end)
        break;
      char e = *p++;
      switch (e) {
      case '"': case '\\': case '/': out += e; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        if (end - p < 4)
          return error("truncated \\u escape");
        unsigned code = 0;
        for (int i = 0; i < 4; ++i) {
          char h = *p++;
          code <<= 4;
          if (h >= '0' && h <= '9') code |= unsigned(h - '0');
          else if (h >= 'a' && h <= 'f') code |= unsigned(h - 'a' + 10);
          else if (h >= 'A' && h <= 'F') code |= unsigned(h - 'A' + 10);
          else return error("bad \\u escape");
        }
        // UTF-8 of a BMP code point (surrogate pairs are kept as two).
        if (code < 0x80) {
          out += char(code);
        } else if (code < 0x800) {
          out += char(0xc0 | (code >> 6));
          out += char(0x80 | (code & 0x3f));
        } else {
          out += char(0xe0 | (code >> 12));
          out += char(0x80 | ((code >> 6) & 0x3f));
          out += char(0x80 | (code & 0x3f));
        }
        break;
      }
      default:
        return error("bad escape");
      }
    }
    if (p == end)
      return error("unterminated string");
    ++p; // closing quote
    return Status::ok();
  }

  const char *p, *begin, *end;
};

bool dtypeFromName(const std::string &name, DType &out) {
  static const std::pair<const char *, DType> names[] = {
      {"F32", DType::F32},   {"F16", DType::F16}, {"BF16", DType::BF16},
      {"I64", DType::I64},   {"I32", DType::I32}, {"BOOL", DType::I1},
      {"F64", DType::F64},   {"I16", DType::I16}, {"I8", DType::I8},
      {"U8", DType::U8},     {"U16", DType::U16}, {"U32", DType::U32},
      {"U64", DType::U64}};
  for (const auto &[n, d] : names)
    if (name == n) {
      out = d;
      return true;
    }
  return false;
}

/// Bytes per element of every type the format defines (0: unknown).
uint64_t formatElementSize(const std::string &name) {
  static const std::pair<const char *, uint64_t> sizes[] = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},
      {"I32", 4}, {"I16", 2}, {"I8", 1},  {"U64", 8},  {"U32", 4},
      {"U16", 2}, {"U8", 1},  {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
  for (const auto &[n, s] : sizes)
    if (name == n)
      return s;
  return 0;
}

Status describeTensor(const std::string &name, const Json &entry,
                      const uint8_t *data, uint64_t dataSize, SafeTensor &out) {
  std::string ctx = "tensor '" + name + "'";
  if (entry.kind != Json::Object)
    return Status::error(ctx + ": expected an object");
  const Json *dtype = nullptr, *shape = nullptr, *offsets = nullptr;
  for (const auto &[key, value] : entry.members) {
    if (key == "dtype")
      dtype = &value;
    else if (key == "shape")
      shape = &value;
    else if (key == "data_offsets")
      offsets = &value;
  }
  if (!dtype || dtype->kind != Json::String)
    return Status::error(ctx + ": missing string 'dtype'");
  if (!shape || shape->kind != Json::Array)
    return Status::error(ctx + ": missing array 'shape'");
  if (!offsets || offsets->kind != Json::Array || offsets->items.size() != 2)
    return Status::error(ctx + ": 'data_offsets' must be [begin, end]");
  out.dtypeName = dtype->string;
  uint64_t elementSize = formatElementSize(out.dtypeName);
  if (elementSize == 0)
    return Status::error(ctx + ": unknown dtype '" + out.dtypeName + "'");
  out.supported = dtypeFromName(out.dtypeName, out.dtype);
  uint64_t bytes = elementSize;
  for (const Json &dim : shape->items) {
    if (dim.kind != Json::Integer || dim.integer < 0)
      return Status::error(ctx + ": shape entries must be integers >= 0");
    out.shape.push_back(dim.integer);
    if (dim.integer != 0 && bytes > (uint64_t(1) << 62) / uint64_t(dim.integer))
      return Status::error(ctx + ": shape is too large");
    bytes *= uint64_t(dim.integer);
  }
  const Json &b = offsets->items[0], &e = offsets->items[1];
  if (b.kind != Json::Integer || e.kind != Json::Integer || b.integer < 0 ||
      e.integer < b.integer || uint64_t(e.integer) > dataSize)
    return Status::error(ctx + ": data_offsets [" + std::to_string(b.integer) +
                         ", " + std::to_string(e.integer) +
                         "] lie outside the " + std::to_string(dataSize) +
                         "-byte data section (the file is truncated or corrupt)");
  if (uint64_t(e.integer - b.integer) != bytes)
    return Status::error(ctx + ": holds " +
                         std::to_string(e.integer - b.integer) +
                         " bytes but its dtype and shape need " +
                         std::to_string(bytes));
  out.data = data + b.integer;
  out.size = bytes;
  return Status::ok();
}

} // namespace

std::string SafeTensor::str() const {
  std::string s = dtypeName + "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

SafeTensorsFile::~SafeTensorsFile() {
  if (mapping)
    ::munmap(mapping, mappingSize);
}

void SafeTensorsFile::release(const uint8_t *data, size_t size) const {
  auto base = reinterpret_cast<uintptr_t>(mapping);
  auto begin = reinterpret_cast<uintptr_t>(data);
  if (!mapping || begin < base || begin + size > base + mappingSize)
    return;
  auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  uintptr_t first = (begin + page - 1) / page * page;
  uintptr_t last = (begin + size) / page * page;
  if (first < last)
    ::madvise(reinterpret_cast<void *>(first), last - first, MADV_DONTNEED);
}

StatusOr<std::unique_ptr<SafeTensorsFile>>
SafeTensorsFile::parse(const uint8_t *data, size_t size) {
  if (size < 8)
    return Status::error("not a safetensors file: " + std::to_string(size) +
                         " bytes is too short");
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i)
    headerSize = (headerSize << 8) | data[i];
  if (headerSize > kMaxHeaderBytes || headerSize > size - 8)
    return Status::error("not a safetensors file: header length " +
                         std::to_string(headerSize) + " does not fit in " +
                         std::to_string(size) + " bytes");
  Json header;
  JsonReader reader(reinterpret_cast<const char *>(data + 8), headerSize);
  if (Status s = reader.read(header); !s)
    return s;
  if (header.kind != Json::Object)
    return Status::error("malformed safetensors header: not a JSON object");
  std::unique_ptr<SafeTensorsFile> file(new SafeTensorsFile());
  const uint8_t *body = data + 8 + headerSize;
  uint64_t bodySize = size - 8 - headerSize;
  for (const auto &[name, entry] : header.members) {
    if (name == "__metadata__")
      continue;
    SafeTensor tensor;
    if (Status s = describeTensor(name, entry, body, bodySize, tensor); !s)
      return s;
    if (!file->table.emplace(name, std::move(tensor)).second)
      return Status::error("malformed safetensors header: tensor '" + name +
                           "' appears twice");
  }
  return file;
}

StatusOr<std::unique_ptr<SafeTensorsFile>>
SafeTensorsFile::open(const std::string &path) {
  auto fail = [&](const std::string &what) {
    return Status::error("cannot " + what + " '" + path +
                         "': " + std::strerror(errno));
  };
  // Non-blocking: a FIFO with no writer must be refused below, not wait.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return fail("open parameter archive");
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return fail("stat");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::error("parameter archive '" + path +
                         "' is not a regular file");
  }
  size_t size = static_cast<size_t>(st.st_size);
  void *mapping = nullptr;
  if (size > 0) {
    mapping = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping == MAP_FAILED) {
      ::close(fd);
      return fail("map");
    }
  }
  ::close(fd);
  StatusOr<std::unique_ptr<SafeTensorsFile>> file =
      parse(static_cast<const uint8_t *>(mapping), size);
  if (!file) {
    if (mapping)
      ::munmap(mapping, size);
    return Status::error(path + ": " + file.status().message());
  }
  (*file)->filePath = path;
  (*file)->mapping = mapping;
  (*file)->mappingSize = size;
  return file;
}

const SafeTensor *SafeTensorsFile::find(const std::string &name) const {
  auto it = table.find(name);
  return it == table.end() ? nullptr : &it->second;
}

namespace {
/// \p text as a JSON string literal.
std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char escaped[8];
      snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

const char *formatName(DType dtype) {
  switch (dtype) {
  case DType::F32: return "F32";
  case DType::F16: return "F16";
  case DType::BF16: return "BF16";
  case DType::F64: return "F64";
  case DType::I64: return "I64";
  case DType::I32: return "I32";
  case DType::I16: return "I16";
  case DType::I8: return "I8";
  case DType::I1: return "BOOL";
  case DType::U8: return "U8";
  case DType::U16: return "U16";
  case DType::U32: return "U32";
  case DType::U64: return "U64";
  }
  return "F32";
}
} // namespace

Status flow::runtime::writeSafeTensors(
    const std::string &path, const std::map<std::string, HostTensor> &tensors,
    const std::map<std::string, std::string> &metadata) {
  std::string header = "{";
  bool first = true;
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    for (const auto &[key, value] : metadata) {
      header += (first ? "" : ",") + jsonString(key) + ":" + jsonString(value);
      first = false;
    }
    header += "}";
  }
  uint64_t offset = 0;
  for (const auto &[name, t] : tensors) {
    if (name == "__metadata__")
      return Status::error(path + ": a tensor cannot be called __metadata__");
    TensorSpec spec{t.dtype, t.shape};
    if (t.data.size() != spec.byteSize())
      return Status::error(path + ": tensor '" + name + "' (" + spec.str() +
                           ") has " + std::to_string(t.data.size()) +
                           " data bytes");
    header += std::string(header.size() > 1 ? "," : "") + jsonString(name) +
              ":{\"dtype\":\"" + formatName(t.dtype) + "\",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i)
      header += (i ? "," : "") + std::to_string(t.shape[i]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + t.data.size()) + "]}";
    offset += t.data.size();
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  uint64_t length = header.size();
  uint8_t prefix[8];
  for (int i = 0; i < 8; ++i)
    prefix[i] = static_cast<uint8_t>(length >> (8 * i));
  std::vector<ByteSpan> pieces = {{prefix, 8}, {header.data(), header.size()}};
  for (const auto &[name, t] : tensors)
    pieces.push_back({t.data.data(), t.data.size()});
  return replaceFile(path, pieces);
}
