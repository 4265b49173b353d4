//===- Npy.cpp - Reading and writing numpy .npy files ---------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// The parser treats its input as untrusted: every length is checked against
// the buffer before use, sizes use checked arithmetic, and the header dict is
// parsed by a small recursive-descent parser rather than by pattern matching.
//
//===----------------------------------------------------------------------===//

#include "flow/runtime/Npy.h"
#include "flow/runtime/Executable.h"
#include "flow/runtime/FileWriter.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <limits>
#include <new>
#include <string_view>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace flow::runtime;

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kAlign = 64;
/// The longest header accepted (numpy's own reader stops at 10000 bytes by
/// default): a length field beyond it is taken for a corrupt file, not
/// read.
constexpr size_t kMaxHeaderBytes = 1u << 20;
/// numpy pads the header so the first dimension can grow to this many digits
/// in place (numpy >= 1.23); matching it keeps serializeNpy byte-exact.
constexpr size_t kGrowthAxisMaxDigits = 21;

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "'=' descrs and the data layout assume a little-endian host");

/// Properties of each DType, indexed by its value.
struct DTypeInfo {
  const char *name;
  size_t size;
  const char *descr; // Written by serializeNpy.
};
constexpr DTypeInfo kDTypeInfo[] = {
    {"f32", 4, "<f4"},  {"f16", 2, "<f2"},   {"bf16", 2, "<V2"},
    {"i64", 8, "<i8"},  {"i32", 4, "<i4"},   {"i1", 1, "|b1"},
    {"f64", 8, "<f8"},  {"i16", 2, "<i2"},   {"i8", 1, "|i1"},
    {"ui8", 1, "|u1"},  {"ui16", 2, "<u2"},  {"ui32", 4, "<u4"},
    {"ui64", 8, "<u8"}};
constexpr size_t kNumDTypes = sizeof(kDTypeInfo) / sizeof(kDTypeInfo[0]);

const DTypeInfo &info(DType dtype) {
  static const DTypeInfo invalid = {"?", 0, "?"};
  size_t i = static_cast<size_t>(dtype);
  return i < kNumDTypes ? kDTypeInfo[i] : invalid;
}

/// Quotes \p s for an error message, escaping non-printable bytes and
/// truncating long strings.
std::string quote(std::string_view s) {
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < 40; ++i) {
    unsigned char c = s[i];
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
      continue;
    }
    char buf[8];
    snprintf(buf, sizeof(buf), "\\x%02x", c);
    out += buf;
  }
  return out + (s.size() > 40 ? "...'" : "'");
}

/// Describes a numpy type code such as "f8" for error messages.
std::string numpyTypeName(std::string_view code) {
  static const std::pair<char, const char *> kinds[] = {
      {'f', "float"},          {'i', "int"},         {'u', "uint"},
      {'c', "complex"},        {'b', "bool"},        {'O', "object"},
      {'U', "unicode string"}, {'S', "byte string"}, {'V', "void"},
      {'M', "datetime64"},     {'m', "timedelta64"}};
  for (auto [kind, name] : kinds) {
    if (code.empty() || code[0] != kind)
      continue;
    // Sized numeric kinds get their width in bits: "f8" is float64.
    std::string_view digits = code.substr(1);
    if (!strchr("fiuc", kind) || digits.empty() || digits.size() > 2 ||
        digits.find_first_not_of("0123456789") != std::string_view::npos)
      return name;
    int bytes = digits.size() == 1 ? digits[0] - '0'
                                   : (digits[0] - '0') * 10 + digits[1] - '0';
    return name + std::to_string(8 * bytes);
  }
  return "";
}

/// Maps a descr string to a DType.
Status lookupDescr(const std::string &descr, DType &dtype) {
  if (!descr.empty() && descr[0] == '>')
    return Status::error("big-endian data (" + quote(descr) +
                         ") is not supported; convert with arr.astype(" +
                         quote("<" + descr.substr(1)) + ")");
  // '=' (native) is little-endian on every host the runtime supports.
  std::string normalized = descr;
  if (!normalized.empty() && normalized[0] == '=')
    normalized[0] = '<';
  // One-byte types have no byte order: numpy writes '|i1', '|u1', '|b1'.
  if (normalized.size() == 3 && normalized[0] == '<' && normalized[2] == '1' &&
      strchr("iub", normalized[1]))
    normalized[0] = '|';
  // numpy itself writes plain void 'V2' as '|V2'.
  if (normalized == "|V2")
    normalized = "<V2";
  for (size_t i = 0; i < kNumDTypes; ++i) {
    if (normalized == kDTypeInfo[i].descr) {
      dtype = static_cast<DType>(i);
      return Status::ok();
    }
  }
  std::string_view code = descr;
  if (!code.empty() && code[0] != '\0' && strchr("<=|", code[0]))
    code.remove_prefix(1);
  std::string typeName = numpyTypeName(code);
  std::string msg = "dtype " + quote(descr);
  if (!typeName.empty())
    msg += " (" + typeName + ")";
  msg += " is not supported; supported:";
  const char *sep = " ";
  for (const DTypeInfo &t : kDTypeInfo) {
    msg += sep + std::string("'") + t.descr + "' (" + t.name + ")";
    sep = ", ";
  }
  return Status::error(msg);
}

/// The fields of a .npy header dict.
struct Header {
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
};

/// Parses the Python dict literal of a .npy header, e.g.
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`.
class HeaderParser {
public:
  explicit HeaderParser(std::string_view text) : text(text) {}

  Status parse(Header &header) {
    skipSpace();
    if (!consume('{'))
      return Status::error("header is not a dict: " + quote(text));
    bool seenDescr = false, seenOrder = false, seenShape = false;
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      std::string key;
      if (Status s = parseString(key, "dict key"); !s)
        return s;
      skipSpace();
      if (!consume(':'))
        return errorAt("expected ':' after key " + quote(key));
      skipSpace();
      Status s = Status::ok();
      if (key == "descr" && !seenDescr) {
        seenDescr = true;
        if (peek() == '[')
          return Status::error("structured dtypes are not supported");
        s = parseString(header.descr, "string for 'descr'");
      } else if (key == "fortran_order" && !seenOrder) {
        seenOrder = true;
        s = parseBool(header.fortranOrder);
      } else if (key == "shape" && !seenShape) {
        seenShape = true;
        s = parseShape(header.shape);
      } else if (key == "descr" || key == "fortran_order" || key == "shape") {
        return Status::error("header has duplicate key " + quote(key));
      } else {
        return Status::error("header has unexpected key " + quote(key));
      }
      if (!s)
        return s;
      skipSpace();
      if (consume(','))
        continue;
      if (consume('}'))
        break;
      return errorAt("expected ',' or '}' in header dict");
    }
    skipSpace();
    if (pos != text.size())
      return errorAt("unexpected characters after header dict");
    for (auto [seen, key] : {std::pair{seenDescr, "descr"},
                             {seenOrder, "fortran_order"},
                             {seenShape, "shape"}})
      if (!seen)
        return Status::error(std::string("header is missing key '") + key +
                             "'");
    return Status::ok();
  }

private:
  char peek() const { return pos < text.size() ? text[pos] : '\0'; }
  bool consume(char c) {
    if (pos >= text.size() || text[pos] != c)
      return false;
    ++pos;
    return true;
  }
  void skipSpace() {
    while (pos < text.size() && strchr(" \t\n\r\f\v", text[pos]) &&
           text[pos] != '\0')
      ++pos;
  }
  Status errorAt(const std::string &msg) const {
    return Status::error(msg + " at header offset " + std::to_string(pos) +
                         " (near " + quote(text.substr(pos, 16)) + ")");
  }

  /// Parses a quoted string without escapes.
  Status parseString(std::string &out, const char *what) {
    char q = peek();
    if (q != '\'' && q != '"')
      return errorAt(std::string("expected a quoted ") + what);
    size_t end = text.find(q, pos + 1);
    if (end == std::string_view::npos)
      return errorAt("unterminated string");
    std::string_view body = text.substr(pos + 1, end - pos - 1);
    if (body.find('\\') != std::string_view::npos)
      return errorAt("escape sequences in strings are not supported");
    out = std::string(body);
    pos = end + 1;
    return Status::ok();
  }

  Status parseBool(bool &out) {
    for (auto [word, value] : {std::pair{"True", true}, {"False", false}}) {
      size_t len = strlen(word);
      if (text.substr(pos, len) == word && !isIdentChar(pos + len)) {
        pos += len;
        out = value;
        return Status::ok();
      }
    }
    return errorAt("'fortran_order' must be True or False");
  }

  bool isIdentChar(size_t i) const {
    if (i >= text.size())
      return false;
    char c = text[i];
    return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
           (c >= 'A' && c <= 'Z') || c == '.';
  }

  /// Parses a tuple of non-negative integers: `()`, `(5,)`, `(2, 3)`.
  Status parseShape(std::vector<int64_t> &shape) {
    if (!consume('('))
      return errorAt("'shape' must be a tuple");
    skipSpace();
    bool sawComma = false;
    if (!consume(')')) {
      while (true) {
        int64_t dim;
        if (Status s = parseDim(dim); !s)
          return s;
        shape.push_back(dim);
        skipSpace();
        if (consume(',')) {
          sawComma = true;
          skipSpace();
          if (consume(')'))
            break;
          continue;
        }
        if (consume(')'))
          break;
        return errorAt("expected ',' or ')' in shape");
      }
    }
    // In Python `(5)` is an int, not a tuple.
    if (shape.size() == 1 && !sawComma)
      return Status::error("'shape' must be a tuple; (N) needs a comma: (N,)");
    return Status::ok();
  }

  Status parseDim(int64_t &dim) {
    size_t start = pos;
    bool negative = consume('-');
    if (negative)
      skipSpace();
    if (!(peek() >= '0' && peek() <= '9'))
      return errorAt("non-integer dimension in shape");
    uint64_t value = 0;
    bool overflow = false;
    while (peek() >= '0' && peek() <= '9') {
      if (!overflow)
        value = value * 10 + (text[pos] - '0');
      overflow |= value > static_cast<uint64_t>(INT64_MAX);
      ++pos;
    }
    consume('L'); // Python 2 long suffix, found in old files.
    if (isIdentChar(pos))
      return errorAt("non-integer dimension in shape");
    std::string_view literal = text.substr(start, pos - start);
    if (negative && value != 0)
      return Status::error("negative dimension " + std::string(literal) +
                           " in shape");
    if (overflow)
      return Status::error("dimension " + quote(literal) +
                           " in shape is too large");
    dim = static_cast<int64_t>(value);
    return Status::ok();
  }

  std::string_view text;
  size_t pos = 0;
};

std::string shapeRepr(const std::vector<int64_t> &shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

/// Computes numElements * itemSize for a shape, failing on negative
/// dimensions or overflow.
bool checkedByteSize(const std::vector<int64_t> &shape, size_t itemSize,
                     int64_t &elements, size_t &bytes) {
  elements = 1;
  for (int64_t dim : shape)
    if (dim < 0 || __builtin_mul_overflow(elements, dim, &elements))
      return false;
  return !__builtin_mul_overflow(static_cast<uint64_t>(elements), itemSize,
                                 &bytes);
}

uint32_t readLE(const uint8_t *p, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i)
    v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

std::string errnoMessage(const char *verb, const std::string &path) {
  return std::string("cannot ") + verb + " '" + path + "': " + strerror(errno);
}

} // namespace

size_t flow::runtime::dtypeSize(DType dtype) { return info(dtype).size; }

const char *flow::runtime::dtypeName(DType dtype) { return info(dtype).name; }

int64_t HostTensor::numElements() const {
  int64_t elements;
  size_t bytes;
  return checkedByteSize(shape, 1, elements, bytes) ? elements : -1;
}

namespace {

/// What the preamble and header of a .npy file say.
struct Layout {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// Where the data starts (the preamble and header length) and how many
  /// bytes it has.
  size_t dataOffset = 0;
  size_t dataBytes = 0;
};

/// The length of the preamble (magic, version, header length) of the file
/// starting with the \p size bytes at \p bytes, or 0 when they are too few
/// to tell; fails on a bad magic or version.
Status preambleLength(const uint8_t *bytes, size_t size, size_t &length) {
  length = 0;
  if (size < kMagicLen || memcmp(bytes, kMagic, kMagicLen) != 0)
    return Status::error("not a .npy file (bad magic; expected \\x93NUMPY)");
  if (size < kMagicLen + 2)
    return Status::ok();
  unsigned major = bytes[6], minor = bytes[7];
  if (major < 1 || major > 3 || minor != 0)
    return Status::error("unsupported .npy version " + std::to_string(major) +
                         "." + std::to_string(minor) +
                         " (supported: 1.0, 2.0, 3.0)");
  length = kMagicLen + 2 + (major == 1 ? 2 : 4);
  return Status::ok();
}

/// Reads the preamble and header at the start of the \p size bytes at
/// \p bytes (which may end after the header).
Status parseLayout(const uint8_t *bytes, size_t size, Layout &layout) {
  size_t preamble;
  if (Status s = preambleLength(bytes, size, preamble); !s)
    return s;
  if (preamble == 0 || size < preamble)
    return Status::error("truncated: file ends inside the .npy preamble");
  size_t headerLen = readLE(bytes + kMagicLen + 2, preamble - kMagicLen - 2);
  if (headerLen > kMaxHeaderBytes)
    return Status::error("header length " + std::to_string(headerLen) +
                         " is larger than the limit of " +
                         std::to_string(kMaxHeaderBytes) +
                         " bytes (the file is corrupt)");
  if (headerLen > size - preamble)
    return Status::error("header length " + std::to_string(headerLen) +
                         " extends past end of file (" + std::to_string(size) +
                         " bytes)");

  Header header;
  std::string_view text(reinterpret_cast<const char *>(bytes + preamble),
                        headerLen);
  if (Status s = HeaderParser(text).parse(header); !s)
    return Status::error("invalid header: " + s.message());
  if (Status s = lookupDescr(header.descr, layout.dtype); !s)
    return s;
  if (header.fortranOrder)
    return Status::error("fortran_order=True is not supported; save a "
                         "C-contiguous array (use numpy.ascontiguousarray)");
  int64_t elements;
  if (!checkedByteSize(header.shape, dtypeSize(layout.dtype), elements,
                       layout.dataBytes))
    return Status::error("shape " + shapeRepr(header.shape) +
                         " has too many elements (size overflows)");
  layout.shape = std::move(header.shape);
  layout.dataOffset = preamble + headerLen;
  return Status::ok();
}

/// Checks that the \p count bytes of a bool tensor are 0 or 1.
Status checkBools(const uint8_t *data, size_t count) {
  for (size_t i = 0; i < count; ++i)
    if (data[i] > 1)
      return Status::error("invalid bool value " + std::to_string(data[i]) +
                           " at element " + std::to_string(i) +
                           " (must be 0 or 1)");
  return Status::ok();
}

std::string dataSizeError(size_t expected, size_t found) {
  if (found < expected)
    return "truncated: expected " + std::to_string(expected) +
           " data bytes, found " + std::to_string(found);
  return "expected " + std::to_string(expected) + " data bytes, found " +
         std::to_string(found) + " (" + std::to_string(found - expected) +
         " trailing bytes)";
}

/// Reads up to \p count bytes from \p fd, appending them to \p out;
/// stops early only at the end of the input.
Status readUpTo(int fd, size_t count, std::vector<uint8_t> &out,
                const std::string &path) {
  size_t done = 0;
  while (done < count) {
    size_t start = out.size();
    // Grow with what arrives, not with what was asked for: an input that
    // ends early costs no more memory than it holds.
    size_t chunk = std::min(count - done, std::max<size_t>(start, 1u << 16));
    out.resize(start + chunk);
    ssize_t n = ::read(fd, out.data() + start, chunk);
    if (n < 0 && errno == EINTR) {
      out.resize(start);
      continue;
    }
    if (n <= 0) {
      out.resize(start);
      if (n < 0)
        return Status::error(errnoMessage("read", path));
      break;
    }
    out.resize(start + static_cast<size_t>(n));
    done += static_cast<size_t>(n);
  }
  return Status::ok();
}

/// The most data bytes readNpy accepts: the runtime's buffer limit, or the
/// machine's memory when that is smaller.
size_t maxDataBytes() {
  uint64_t limit = kMaxBufferBytes;
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  if (pages > 0 && pageSize > 0 &&
      uint64_t(pages) <= std::numeric_limits<uint64_t>::max() / pageSize)
    limit = std::min<uint64_t>(limit, uint64_t(pages) * uint64_t(pageSize));
  return static_cast<size_t>(limit);
}

} // namespace

StatusOr<HostTensor> flow::runtime::parseNpy(const uint8_t *bytes, size_t size,
                                             const std::string &name) {
  auto fail = [&](const std::string &msg) {
    return Status::error((name.empty() ? "<memory>" : name) + ": " + msg);
  };
  Layout layout;
  if (Status s = parseLayout(bytes, size, layout); !s)
    return fail(s.message());
  size_t found = size - layout.dataOffset;
  if (found != layout.dataBytes)
    return fail(dataSizeError(layout.dataBytes, found));
  const uint8_t *data = bytes + layout.dataOffset;
  if (layout.dtype == DType::I1)
    if (Status s = checkBools(data, layout.dataBytes); !s)
      return fail(s.message());
  HostTensor tensor;
  tensor.dtype = layout.dtype;
  tensor.shape = std::move(layout.shape);
  tensor.data.assign(data, data + layout.dataBytes);
  return tensor;
}

StatusOr<HostTensor> flow::runtime::readNpy(const std::string &path) {
  auto fail = [&](const std::string &msg) {
    return Status::error(path + ": " + msg);
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::error(errnoMessage("read", path));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st;
  bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);

  // Read the header first, then exactly the bytes it declares: the input
  // may be a pipe or a device that never ends.
  try {
    std::vector<uint8_t> head;
    size_t preamble = 0;
    if (Status s = readUpTo(fd, kMagicLen + 2, head, path); !s)
      return s;
    if (Status s = preambleLength(head.data(), head.size(), preamble); !s)
      return fail(s.message());
    if (preamble > 0)
      if (Status s = readUpTo(fd, preamble - head.size(), head, path); !s)
        return s;
    if (preamble > 0 && head.size() == preamble) {
      size_t headerLen = readLE(head.data() + kMagicLen + 2,
                                preamble - kMagicLen - 2);
      if (headerLen <= kMaxHeaderBytes)
        if (Status s = readUpTo(fd, headerLen, head, path); !s)
          return s;
    }
    Layout layout;
    if (Status s = parseLayout(head.data(), head.size(), layout); !s)
      return fail(s.message());

    if (regular && uint64_t(st.st_size) >= layout.dataOffset &&
        uint64_t(st.st_size) - layout.dataOffset != layout.dataBytes)
      return fail(dataSizeError(layout.dataBytes,
                                size_t(st.st_size) - layout.dataOffset));
    size_t limit = maxDataBytes();
    if (layout.dataBytes > limit)
      return fail("shape " + shapeRepr(layout.shape) + " of " +
                  dtypeName(layout.dtype) + " needs " +
                  std::to_string(layout.dataBytes) +
                  " data bytes, more than the limit of " +
                  std::to_string(limit) + " bytes");

    HostTensor tensor;
    tensor.dtype = layout.dtype;
    tensor.shape = std::move(layout.shape);
    if (regular)
      tensor.data.reserve(layout.dataBytes); // Checked against the file.
    if (Status s = readUpTo(fd, layout.dataBytes, tensor.data, path); !s)
      return s;
    if (tensor.data.size() != layout.dataBytes)
      return fail(dataSizeError(layout.dataBytes, tensor.data.size()));
    // Anything after the declared data is an error, not more data.
    std::vector<uint8_t> probe;
    if (Status s = readUpTo(fd, 1, probe, path); !s)
      return s;
    if (!probe.empty())
      return fail("the input continues past the " +
                  std::to_string(layout.dataBytes) +
                  " data bytes its header declares");
    if (tensor.dtype == DType::I1)
      if (Status s = checkBools(tensor.data.data(), tensor.data.size()); !s)
        return fail(s.message());
    return tensor;
  } catch (const std::bad_alloc &) {
    return fail("out of memory reading the file");
  }
}

std::vector<uint8_t> flow::runtime::serializeNpy(const HostTensor &tensor) {
  std::string header =
      std::string("{'descr': '") + info(tensor.dtype).descr +
      "', 'fortran_order': False, 'shape': " + shapeRepr(tensor.shape) + ", }";
  if (!tensor.shape.empty()) {
    size_t digits = std::to_string(tensor.shape[0]).size();
    if (digits < kGrowthAxisMaxDigits)
      header.append(kGrowthAxisMaxDigits - digits, ' ');
  }
  // Like numpy: pad with 1..64 spaces plus '\n' so the data is aligned, and
  // use version 2.0 only when the header length does not fit in 16 bits.
  size_t lenBytes = 2;
  size_t total = header.size() + 1;
  total += kAlign - (kMagicLen + 2 + lenBytes + total) % kAlign;
  if (total > 0xffff) {
    lenBytes = 4;
    total = header.size() + 1;
    total += kAlign - (kMagicLen + 2 + lenBytes + total) % kAlign;
  }
  header.append(total - header.size() - 1, ' ');
  header += '\n';

  std::vector<uint8_t> out(kMagic, kMagic + kMagicLen);
  out.push_back(lenBytes == 2 ? 1 : 2);
  out.push_back(0);
  for (size_t i = 0; i < lenBytes; ++i)
    out.push_back(static_cast<uint8_t>(total >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), tensor.data.begin(), tensor.data.end());
  return out;
}

Status flow::runtime::writeNpy(const std::string &path,
                               const HostTensor &tensor) {
  int64_t elements;
  size_t expected;
  if (!checkedByteSize(tensor.shape, dtypeSize(tensor.dtype), elements,
                       expected))
    return Status::error("cannot write '" + path + "': invalid shape " +
                         shapeRepr(tensor.shape));
  if (tensor.data.size() != expected)
    return Status::error("cannot write '" + path + "': tensor has " +
                         std::to_string(tensor.data.size()) +
                         " data bytes, expected " + std::to_string(expected));
  std::vector<uint8_t> bytes = serializeNpy(tensor);

  return replaceFile(path, {{bytes.data(), bytes.size()}});
}
